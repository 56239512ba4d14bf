# heldout.jq — the table of scripts/heldout.sh: reads one object per
# backtest, {"profile", "seed", "report": policygen backtest -format json},
# and prints a Markdown table, one row per profile and deadline, one
# column per seed: lanewatch's deadlines met of its jobs and its paid USD
# as a share of always paying; in a cell a baseline beats lanewatch in (at
# least as many deadlines met for under 0.9 of its paid USD, or 3 more for
# no more: a fallback@T, tuned, tuned-weekly or tuned-hourly), the
# cheapest such baseline after "lost:". Then lanewatch's median and p90
# time to result, the free lane's coverage_all, and a summary.

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

def baseline: .strategy | (startswith("fallback@") or startswith("tuned"));

[inputs] as $runs
| [ $runs[] | . as $r | $r.report.baselines | map(select(.class == "interactive")) | group_by(.deadline_s)[]
    | (map(select(.strategy == "lanewatch"))[0]) as $lw
    | (map(select(.strategy == "paid"))[0].paid_usd) as $paid
    | { profile: $r.profile, seed: $r.seed, deadline: $lw.deadline_s, lw: $lw, paid: $paid,
        cov: ($r.report.calibration[0].kinds | map(select(.kind == "free"))[0].coverage_all),
        target: $r.report.calibration[0].target_coverage,
        losses: (map(select(baseline and ((.met >= $lw.met and .paid_usd < 0.9 * $lw.paid_usd)
                                        or (.met >= $lw.met + 3 and .paid_usd <= $lw.paid_usd))))
                 | sort_by(.paid_usd, .strategy)) } ] as $cells
| ($runs | map(.profile) | unique) as $profiles
| ($runs | map(.seed) | unique) as $seeds
| def share($c; $x): if $c.paid > 0 then $x / $c.paid else 0 end;
  "| family | deadline | " + ($seeds | map("seed \(.)") | join(" | ")) + " | lanewatch median / p90 s | coverage_all (target \($cells[0].target)) |",
  "|---|---|" + ($seeds | map("---") | join("|")) + "|---|---|",
  ( $profiles[] as $p | $cells | map(select(.profile == $p)) | group_by(.deadline)[]
    | . as $g
    | "| \($p) | \($g[0].deadline) s | "
      + ($seeds | map(. as $s | $g | map(select(.seed == $s))[0]
          | "\(.lw.met)/\(.lw.jobs) · \(share(.; .lw.paid_usd) | fixed(3))"
            + (if (.losses | length) > 0 then " lost: \(.losses[0].strategy) \(.losses[0].met) · \(share(.; .losses[0].paid_usd) | fixed(3))" else "" end))
        | join(" | "))
      + " | \($g | span(.lw.median_time_s // 0; fixed(1))) / \($g | span(.lw.p90_time_s // 0; fixed(1))) | \($g | span(.cov; fixed(4))) |"),
  "",
  ( [ $cells[] | select(.losses | length > 0) ] as $lost
    | "lost in \($lost | length) of \($cells | length) cells (\($profiles | length) families × 3 deadlines × \($seeds | length) seeds)"
      + (if ($lost | length) > 0 then ": " + ($lost | group_by(.deadline) | map("\(length) at \(.[0].deadline) s") | join(", ")) else "" end) ),
  ( [ $cells[] | select(((.cov - .target) | fabs) > 0.02) | {profile, seed, cov} ] | unique as $off
    | "coverage_all more than 2 points off its target in \($off | length) of \($runs | length) histories"
      + (if ($off | length) > 0 then ": " + ($off | map("\(.profile) seed \(.seed) \(.cov)") | join(", ")) else "" end) )
