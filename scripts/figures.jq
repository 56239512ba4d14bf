# figures.jq — the grid of scripts/figures.sh: reads one object per
# backtest, {"profile", "seed", "baselines": [...]} (policygen backtest
# -format json's baselines), and prints, per profile, class and deadline,
# the ranges over the seeds of each strategy's met % / paid USD as a
# fraction of always paying (the paid strategy's USD) / abandoned free
# requests, then every cell where a fallback@T dominates lanewatch (met at
# least as many deadlines for no more USD, one of the two strictly better).

# fixed(d): a number with d decimals, as %.{d}f (half away from zero).
def fixed(d):
  (. * pow(10; d) | round) as $i
  | ($i | tostring) as $s
  | if d == 0 then $s
    else ("0" * ([d + 1 - ($s | length), 0] | max)) as $z
    | (if $z == null then "" else $z end + $s) as $t
    | $t[0:($t | length) - d] + "." + $t[($t | length) - d:]
    end;

# span(f; g): "a" or "a-b", the range of the values f over the seeds,
# each formatted by g.
def span(f; g): map(f) | [min, max] | map(g) | if .[0] == .[1] then .[0] else join("-") end;

# pad(n): the string padded with spaces to n characters, and two more.
def pad(n): tostring | . + (" " * ([n - length, 0] | max) // "") + "  ";

[inputs] as $runs
| ($runs | map(.profile) | unique) as $profiles
| ($runs[0].baselines | map(.strategy) | unique | map(select(startswith("fallback@")))
   | sort_by(.[9:] | tonumber)) as $fallbacks
| [ $runs[] as $r | $r.baselines
    | group_by([.class, .deadline_s])[]
    | (map(select(.strategy == "paid"))[0].paid_usd) as $paid
    | .[] | . + {profile: $r.profile, seed: $r.seed,
                 frac: (if $paid > 0 then .paid_usd / $paid else 0 end)} ] as $rows
| ($rows | map(select(.strategy == "lanewatch" or (.strategy | startswith("fallback@"))))) as $rows
| "met % / paid USD as a fraction of always paying / abandoned free requests: ranges over seeds " + ($runs | map(.seed) | unique | map(tostring) | join(", ")),
  ([("profile" | pad(7)), ("class" | pad(11)), ("deadline" | pad(8)), ("lanewatch" | pad(31))] + ($fallbacks | map(pad(22))) | join("") | sub(" +$"; "")),
  ( $profiles[] as $p
    | $rows | map(select(.profile == $p)) | group_by([.class, .deadline_s])
    | sort_by(.[0].class != "interactive", .[0].class, .[0].deadline_s)[]
    | . as $cell
    | ($cell | map(select(.strategy == "lanewatch"))) as $lw
    | [ ($p | pad(7)), ($cell[0].class | pad(11)), (($cell[0].deadline_s | tostring) + " s" | pad(8)),
        (($lw | span(.met_pct; fixed(1))) + " / " + ($lw | span(.frac; fixed(2))) + " / " + ($lw | span(.abandoned_free_requests; tostring)) | pad(31)) ]
      + ($fallbacks | map(. as $f | $cell | map(select(.strategy == $f))
          | (span(.met_pct; fixed(1)) + " / " + span(.frac; fixed(2))) | pad(22)))
    | join("") | sub(" +$"; "")),
  ( [ $rows | group_by([.profile, .class, .deadline_s, .seed])[]
      | (map(select(.strategy == "lanewatch"))[0]) as $l
      | .[] | select(.strategy != "lanewatch")
      | select(.met >= $l.met and .paid_usd <= $l.paid_usd and (.met > $l.met or .paid_usd < $l.paid_usd))
      | "\(.profile) \(.class) \(.deadline_s) s seed \(.seed): \(.strategy) \(.met_pct | fixed(2)) % / \(.paid_usd | fixed(4)) USD vs lanewatch \($l.met_pct | fixed(2)) % / \($l.paid_usd | fixed(4)) USD" ] as $dom
    | ($rows | map([.profile, .class, .deadline_s, .seed]) | unique | length) as $cells
    | ($rows | map([.profile, .class, .deadline_s]) | unique | length) as $groups
    | if ($dom | length) == 0 then "a fallback@T dominates lanewatch in none of \($cells) cells (\($groups) rows × \($runs | length / ($profiles | length)) seeds)"
      else "a fallback@T dominates lanewatch in \($dom | map(split(":")[0]) | unique | length) of \($cells) cells (\($groups) rows × \($runs | length / ($profiles | length)) seeds):", ($dom[] | "  " + .)
      end )
