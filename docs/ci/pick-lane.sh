#!/usr/bin/env bash
# pick-lane.sh: run a command on the lane lanewatch picks for a class, and
# fail closed. The README's shell recipe; docs/ci/recipe_test.go runs it.
#
#   LANEWATCH_CONFIG=lanewatch.yaml LANEWATCH_CLASS=interactive \
#     docs/ci/pick-lane.sh ./scripts/llm-job.sh
#
# The command sees LANEWATCH_LANE, _BASE_URL, _MODEL, _API, _API_KEY_ENV
# (exported) and LLM_API_KEY, the value of the variable _API_KEY_ENV names.
# Exit 3 when no lane fits the class this hour (stderr says the next hour
# that fits); any other failure of policygen, or a key variable that is not
# set, stops the job with its status: never a run on no lane.
set -euo pipefail
status=0
out=$(policygen lane -config "$LANEWATCH_CONFIG" -class "$LANEWATCH_CLASS" -format env) || status=$?
case "$status" in
  0) eval "$out" ;;
  3)
    next=$(policygen lane -config "$LANEWATCH_CONFIG" -class "$LANEWATCH_CLASS" -next) || next="none in the policy files"
    echo "no lane fits class $LANEWATCH_CLASS this hour; the next hour it fits: $next" >&2
    exit 3 ;;
  *) exit "$status" ;;  # no policy file, unknown class: policygen said why
esac
LLM_API_KEY=""
if [ -n "$LANEWATCH_API_KEY_ENV" ]; then
  LLM_API_KEY=$(printenv "$LANEWATCH_API_KEY_ENV") || {
    echo "lane $LANEWATCH_LANE needs its key in \$$LANEWATCH_API_KEY_ENV, which is not set" >&2
    exit 1
  }
fi
export LLM_API_KEY
exec "$@"
