#!/usr/bin/env bash
# make run: a local kube-apiserver + etcd with the example objects of
# manifests/examples, and build/coredns on 127.0.0.1:1053 serving them.
# Ctrl-C stops everything this script started.
set -euo pipefail
cd "$(dirname "$0")/.."

port=${PORT:-1053}
# The health, readiness and metrics ports (test/release runs make run on free ones).
health_port=${HEALTH_PORT:-8080}
ready_port=${READY_PORT:-8181}
metrics_port=${METRICS_PORT:-9153}
dir=$(mktemp -d -t coredns-mcs-run.XXXXXX)
pids=()
cleanup() {
  trap - INT TERM EXIT
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup INT TERM EXIT

# Only the two binaries of the kube set that a local API server needs; the
# rest of the set (kubelet, kubectl, ...) is for the node tests.
if ! assets=$(bash test/testbin/build.sh --cached kube:kube-apiserver,etcd 2>/dev/null); then
  # Measured with an empty Go build cache on a 2-core machine that also ran
  # other builds: 10m22s and 12m50s.
  echo "Building kube-apiserver and etcd from source, once: about 10 minutes on 2 cores, less with" >&2
  echo "more (then cached in ${XDG_CACHE_HOME:-$HOME/.cache}/coredns-mcs/testbin)..." >&2
  start=$SECONDS
  assets=$(bash test/testbin/build.sh kube:kube-apiserver,etcd)
  echo "Built kube-apiserver and etcd in $(( (SECONDS - start) / 60 ))m$(( (SECONDS - start) % 60 ))s." >&2
fi
go build -o "$dir/localcluster" ./test/cmd/localcluster

KUBEBUILDER_ASSETS="$assets" "$dir/localcluster" \
  -kubeconfig-out "$dir/kubeconfig" -apply manifests/examples -ready-file "$dir/cluster-ready" &
pids+=($!)
for _ in $(seq 1 600); do
  [ -f "$dir/cluster-ready" ] && break
  kill -0 "${pids[0]}" 2>/dev/null || { echo "the local API server failed to start" >&2; exit 1; }
  sleep 0.2
done
[ -f "$dir/cluster-ready" ] || { echo "the local API server did not come up in time" >&2; exit 1; }

cat > "$dir/Corefile" <<COREFILE
.:$port {
    errors
    log
    health 127.0.0.1:$health_port
    ready 127.0.0.1:$ready_port
    multicluster clusterset.local in-addr.arpa ip6.arpa {
        kubeconfig $dir/kubeconfig
        fallback cluster.local
    }
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig $dir/kubeconfig
        pods insecure
        labels !multicluster.kubernetes.io/source-cluster
        fallthrough in-addr.arpa ip6.arpa
    }
    prometheus 127.0.0.1:$metrics_port
}
COREFILE

build/coredns -conf "$dir/Corefile" &
pids+=($!)
ready() { # GET /ready of the ready plugin, without needing curl; a subshell, as a failed exec would end the script
  ( exec 3<>/dev/tcp/127.0.0.1/$ready_port && printf 'GET /ready HTTP/1.0\r\n\r\n' >&3 && head -1 <&3 | grep -q ' 200 ' ) 2>/dev/null &&
  # and the DNS port itself takes connections (the ready plugin may answer first)
  ( exec 3<>/dev/tcp/127.0.0.1/$port ) 2>/dev/null
}
for _ in $(seq 1 100); do
  ready && break
  kill -0 "${pids[1]}" 2>/dev/null || { echo "coredns failed to start" >&2; exit 1; }
  sleep 0.1
done

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

coredns-mcs is serving on 127.0.0.1:$port (Corefile: $dir/Corefile). Try:

  dig @127.0.0.1 -p $port checkout.demo.svc.cluster.local        # import only: answered from the import
  dig @127.0.0.1 -p $port checkout.demo.svc.clusterset.local     # the same, in the clusterset zone
  dig @127.0.0.1 -p $port frontend.demo.svc.cluster.local        # local Service: 10.96.100.100 wins
  dig @127.0.0.1 -p $port frontend.demo.svc.clusterset.local     # its ClusterSetIP: 10.42.0.20
  dig @127.0.0.1 -p $port payments.demo.svc.clusterset.local AAAA  # dual-stack
  dig @127.0.0.1 -p $port _grpc._tcp.payments.demo.svc.clusterset.local SRV
  $get

Why a name answers what it does, with this server's Corefile and API server:

  $mcs explain checkout.demo.svc.cluster.local --kubeconfig $dir/kubeconfig --corefile $dir/Corefile
  $mcs explain _grpc._tcp.payments.demo.svc.clusterset.local SRV --kubeconfig $dir/kubeconfig --corefile $dir/Corefile

Metrics: http://127.0.0.1:$metrics_port/metrics   Ctrl-C stops everything.
MSG
wait "${pids[1]}"
