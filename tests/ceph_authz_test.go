//go:build rados

package tests

import "testing"

// TestCephVersionAuthzProbe: the version authorization probe on a gateway
// over Ceph, where per-version ACLs change through the index class run as
// an optimistic RADOS transaction.
func TestCephVersionAuthzProbe(t *testing.T) {
	conf, _ := cephCluster(t)
	versionAuthzProbe(t, startRadosGateways(t, conf, 1)[0])
}
