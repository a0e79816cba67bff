#!/usr/bin/env bash
# Builds the binaries the integration tests run, one step after the other, in
# the order given: make test starts it in the background (TESTBIN_ORDER), so
# that each suite finds its binaries built, or waits on the build under way.
#
#   test/testbin/chain.sh 'build.sh kube helm; stock 1.14.4; stock; ...'
#
# Steps are separated by ';':
#   build.sh SET...   test/testbin/build.sh SET... (the sets' directories
#                     are not printed: the tests ask build.sh again)
#   stock [VERSION...]  test/cmd/stockcoredns: stock CoreDNS at VERSION, or
#                     at every version a platform ships
# It stops at the first step that fails. Each step's time goes to stderr.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

IFS=';' read -ra steps <<<"${1:?usage: chain.sh 'STEP; STEP...'}"
for step in "${steps[@]}"; do
	read -ra words <<<"$step"
	[ ${#words[@]} -gt 0 ] || continue
	start=$SECONDS
	case ${words[0]} in
	build.sh) bash test/testbin/build.sh "${words[@]:1}" >/dev/null ;;
	stock) "${GO:-go}" run ./test/cmd/stockcoredns "${words[@]:1}" ;;
	*)
		echo "testbin chain: unknown step '$step'" >&2
		exit 2
		;;
	esac
	echo "testbin chain: ${words[*]}: $((SECONDS - start))s" >&2
done
