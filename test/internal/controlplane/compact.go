package controlplane

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
)

// CompactEtcd compacts etcd at its current revision and returns that
// revision: etcd then refuses a watch from any earlier revision, and
// kube-apiserver answers a watch it serves from etcd (--watch-cache=false,
// in APIServerFlags) from an earlier resourceVersion with 410 Gone, reason
// Expired (k8s.io/apiserver v0.37.1 pkg/storage/etcd3/errors.go,
// interpretWatchError: etcd's ErrCompacted). It is what kube-apiserver's own
// compactor does every --etcd-compaction-interval (5 minutes by default),
// to the revision it read one interval before (pkg/storage/etcd3/compact.go),
// done at once. A watch served from the watch cache does not read etcd and
// is not affected.
//
// It speaks etcd's JSON gateway, which etcd serves by default on its client
// URL (go.etcd.io/etcd/server/v3 v3.7.2 embed/config.go,
// EnableGRPCGateway; the paths /v3/kv/range and /v3/kv/compaction in
// go.etcd.io/etcd/api/v3 etcdserverpb/gw/rpc.pb.gw.go).
func (c *ControlPlane) CompactEtcd(ctx context.Context) (int64, error) {
	// Any read answers with the store's current revision in its header.
	var got struct {
		Header struct {
			Revision json.Number `json:"revision"`
		} `json:"header"`
	}
	if err := c.etcdCall(ctx, "/v3/kv/range", map[string]any{"key": "AA=="}, &got); err != nil {
		return 0, err
	}
	rev, err := strconv.ParseInt(got.Header.Revision.String(), 10, 64)
	if err != nil || rev <= 0 {
		return 0, fmt.Errorf("etcd revision %q: %v", got.Header.Revision, err)
	}
	if err := c.etcdCall(ctx, "/v3/kv/compaction", map[string]any{"revision": strconv.FormatInt(rev, 10), "physical": true}, nil); err != nil {
		return 0, err
	}
	return rev, nil
}

// etcdCall posts req as JSON to path of etcd's gateway and decodes the
// answer into resp (if not nil).
func (c *ControlPlane) etcdCall(ctx context.Context, path string, req, resp any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, c.etcdURL+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	r.Header.Set("Content-Type", "application/json")
	res, err := c.httpClient().Do(r)
	if err != nil {
		return fmt.Errorf("etcd %s: %w", path, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("etcd %s: %w", path, err)
	}
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("etcd %s: %s: %s", path, res.Status, data)
	}
	if resp == nil {
		return nil
	}
	if err := json.Unmarshal(data, resp); err != nil {
		return fmt.Errorf("etcd %s: %w: %s", path, err, data)
	}
	return nil
}
