#!/usr/bin/env bash
# make run: a local kube-apiserver + etcd with the example objects of
# manifests/examples, and build/coredns on 127.0.0.1:1053 serving them.
# Ctrl-C stops everything this script started.
set -euo pipefail
cd "$(dirname "$0")/../.."

# Its ports on 127.0.0.1: PORT (DNS, default 1053), HEALTH_PORT, READY_PORT
# and METRICS_PORT (default 18080, 18181 and 19153: CoreDNS's own 8080, 8181
# and 9153 are often held by a CoreDNS or another service of the machine). A
# default that is taken gives way to a free port; a port set is used as set
# (test/release runs make run on free ones).
dir=$(mktemp -d -t coredns-mcs-run.XXXXXX)
pids=()
cleanup() {
  trap - INT TERM EXIT
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup INT TERM EXIT
. test/scripts/runlib.sh

run_build_helpers ./test/cmd/localcluster ./test/cmd/freeport
run_start_cluster
pids+=("$cluster_pid")
run_pick_ports PORT=1053/dns HEALTH_PORT=18080 READY_PORT=18181 METRICS_PORT=19153

cat > "$dir/Corefile" <<COREFILE
.:$PORT {
    errors
    bufsize 1232
    log
    health 127.0.0.1:$HEALTH_PORT
    ready 127.0.0.1:$READY_PORT
    multicluster clusterset.local in-addr.arpa ip6.arpa {
        kubeconfig $kubeconfig
        fallback cluster.local
    }
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig $kubeconfig
        pods insecure
        labels !multicluster.kubernetes.io/source-cluster
        fallthrough in-addr.arpa ip6.arpa
    }
    prometheus 127.0.0.1:$METRICS_PORT
}
COREFILE

build/coredns -conf "$dir/Corefile" &
pids+=($!)
run_wait_ready coredns "${pids[1]}" "$READY_PORT" "$PORT"

# kubectl mcs is build/kubectl-mcs: kubectl runs it as "kubectl mcs" when
# build/ is on PATH. Without a kubectl, run it directly.
if command -v kubectl >/dev/null 2>&1; then
  mcs="PATH=\"$PWD/build:\$PATH\" kubectl mcs"
  get="kubectl --kubeconfig $dir/kubeconfig get serviceimports -A"
else
  mcs="build/kubectl-mcs"
  get="build/kubectl-mcs explain checkout.demo.svc.clusterset.local --kubeconfig $dir/kubeconfig   # (no kubectl on PATH)"
fi

cat >&2 <<MSG

coredns-mcs is serving on 127.0.0.1:$PORT (Corefile: $dir/Corefile). Try:

  dig @127.0.0.1 -p $PORT checkout.demo.svc.cluster.local        # import only: answered from the import
  dig @127.0.0.1 -p $PORT checkout.demo.svc.clusterset.local     # the same, in the clusterset zone
  dig @127.0.0.1 -p $PORT frontend.demo.svc.cluster.local        # local Service: 10.96.100.100 wins
  dig @127.0.0.1 -p $PORT frontend.demo.svc.clusterset.local     # its ClusterSetIP: 10.42.0.20
  dig @127.0.0.1 -p $PORT payments.demo.svc.clusterset.local AAAA  # dual-stack
  dig @127.0.0.1 -p $PORT _grpc._tcp.payments.demo.svc.clusterset.local SRV
  $get

Why a name answers what it does, with this server's Corefile and API server:

  $mcs explain checkout.demo.svc.cluster.local --kubeconfig $dir/kubeconfig --corefile $dir/Corefile
  $mcs explain _grpc._tcp.payments.demo.svc.clusterset.local SRV --kubeconfig $dir/kubeconfig --corefile $dir/Corefile

Ports of 127.0.0.1: DNS $PORT, health $HEALTH_PORT, ready $READY_PORT, metrics $METRICS_PORT (make run PORT=...
HEALTH_PORT=... READY_PORT=... METRICS_PORT=... sets them). Metrics: http://127.0.0.1:$METRICS_PORT/metrics
Ctrl-C stops everything.
MSG
wait "${pids[1]}"
