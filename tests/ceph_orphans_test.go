//go:build rados

package tests

import "testing"

// TestCephChurnCrashLeavesNoOrphans is the churn-and-crash test on a Ceph
// cluster: there every acknowledged RADOS write is durable, so data
// written just before a kill stays until GC or the orphan scan removes it.
func TestCephChurnCrashLeavesNoOrphans(t *testing.T) {
	conf, _ := cephCluster(t)
	churnCrash(t, func(extra ...string) *Gateway { return startRadosGateways(t, conf, 1, extra...)[0] })
}

// TestCephAdminGCListProcess is TestAdminGCListProcess on Ceph.
func TestCephAdminGCListProcess(t *testing.T) {
	conf, _ := cephCluster(t)
	gcListProcess(t, func(extra ...string) *Gateway { return startRadosGateways(t, conf, 1, extra...)[0] })
}
