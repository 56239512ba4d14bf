# heldout.jq — the table of scripts/heldout.sh: reads one object per
# backtest, {"profile", "seed", "report": policygen backtest -format json},
# and prints per profile and deadline lanewatch's deadlines met and paid
# USD (as a share of always paying) over the seeds, the cheapest baseline
# (fallback@T, tuned, tuned-weekly, tuned-hourly) that met as many, the
# free lane's coverage_all, and every cell a baseline beats lanewatch in:
# at least as many deadlines met for under 0.9 of its paid USD, or 3 more
# for no more.

# fixed(d): a number with d decimals, as %.{d}f (half away from zero).
def fixed(d):
  (. * pow(10; d) | round) as $i
  | ($i | tostring) as $s
  | if d == 0 then $s
    else ("0" * ([d + 1 - ($s | length), 0] | max)) as $z
    | (if $z == null then "" else $z end + $s) as $t
    | $t[0:($t | length) - d] + "." + $t[($t | length) - d:]
    end;

# span(f; g): "a" or "a-b", the range of the values f over the seeds.
def span(f; g): map(f) | [min, max] | map(g) | if .[0] == .[1] then .[0] else join("-") end;

# pad(n): the string padded with spaces to n characters, and two more.
def pad(n): tostring | . + (" " * ([n - length, 0] | max) // "") + "  ";

def baseline: .strategy | (startswith("fallback@") or startswith("tuned"));

[inputs] as $runs
| [ $runs[] | . as $r | $r.report.baselines | map(select(.class == "interactive")) | group_by(.deadline_s)[]
    | (map(select(.strategy == "lanewatch"))[0]) as $lw
    | (map(select(.strategy == "paid"))[0].paid_usd) as $paid
    | (map(select(baseline and .met >= $lw.met)) | sort_by(.paid_usd, .strategy) | .[0]) as $cheap
    | { profile: $r.profile, seed: $r.seed, deadline: $lw.deadline_s, lw: $lw, paid: $paid, cheap: $cheap,
        cov: ($r.report.calibration[0].kinds | map(select(.kind == "free"))[0].coverage_all),
        target: $r.report.calibration[0].target_coverage,
        losses: map(select(baseline and ((.met >= $lw.met and .paid_usd < 0.9 * $lw.paid_usd)
                                       or (.met >= $lw.met + 3 and .paid_usd <= $lw.paid_usd)))) } ] as $cells
| ($runs | map(.profile) | unique) as $profiles
| ($runs | map(.seed) | unique) as $seeds
| def frac($c; $x): if $c.paid > 0 then $x / $c.paid else 0 end;
  "lanewatch against fallback@T (T 1-105 s) and the tuned T (on the 14 days before: frozen, weekly, by hour of day); seeds \($seeds | map(tostring) | join(", ")); ranges over the seeds",
  "met % / paid USD as a share of always paying; lanewatch's median and p90 time to result; the cheapest baseline meeting as many deadlines; cov: the free lane's coverage_all (target \($cells[0].target))",
  ([("family" | pad(10)), ("deadline" | pad(8)), ("lanewatch" | pad(26)), ("med / p90 s" | pad(21)), ("cheapest baseline meeting as many" | pad(40)), ("cov" | pad(13)), "lost"] | join("") | sub(" +$"; "")),
  ( $profiles[] as $p | $cells | map(select(.profile == $p)) | group_by(.deadline)[]
    | . as $g
    | [ ($p | pad(10)), (($g[0].deadline | tostring) + " s" | pad(8)),
        (($g | span(.lw.met_pct; fixed(1))) + " / " + ($g | span(frac(.; .lw.paid_usd); fixed(3))) | pad(26)),
        (($g | span(.lw.median_time_s // 0; fixed(1))) + " / " + ($g | span(.lw.p90_time_s // 0; fixed(1))) | pad(21)),
        (if ($g | map(select(.cheap == null)) | length) > 0 then "none in \($g | map(select(.cheap == null)) | length) of \($g | length)"
           + (if ($g | map(select(.cheap != null)) | length) > 0 then ", else " else "" end) else "" end
         + ($g | map(select(.cheap != null)) | if length == 0 then "" else (map(.cheap.strategy) | unique | join(", ")) + " " + span(frac(.; .cheap.paid_usd); fixed(3)) end) | pad(40)),
        ($g | span(.cov; fixed(4)) | pad(13)),
        ("\($g | map(select(.losses | length > 0)) | length) of \($g | length)") ]
    | join("") | sub(" +$"; "")),
  ( [ $cells[] | select(.losses | length > 0) ] as $lost
    | "lost in \($lost | length) of \($cells | length) cells (\($profiles | length) families × 3 deadlines × \($seeds | length) seeds)\(if ($lost | length) > 0 then ":" else "" end)",
      ( $lost[] | . as $c
        | "  \($c.profile) \($c.deadline) s seed \($c.seed): lanewatch \($c.lw.met)/\($c.lw.jobs) for \($c.lw.paid_usd | fixed(4)) USD; "
          + ($c.losses | sort_by(.paid_usd) | .[0:3] | map("\(.strategy) \(.met) for \(.paid_usd | fixed(4))") | join(", "))
          + (if ($c.losses | length) > 3 then " (+\($c.losses | length - 3))" else "" end) ) ),
  ( [ $cells[] | select(((.cov - .target) | fabs) > 0.02) ] as $off
    | "coverage_all more than 2 points off its target in \($off | length) of \($runs | length) histories"
      + (if ($off | length) > 0 then ": " + ($off | map("\(.profile) seed \(.seed) \(.cov)") | unique | join(", ")) else "" end) )
