//go:build rados

package tests

import "testing"

// TestCephTenantIsolation: the tenant isolation probe on a gateway over
// Ceph, where tenants' bucket entry points are RADOS objects "<tenant>/<bucket>".
func TestCephTenantIsolation(t *testing.T) {
	conf, _ := cephCluster(t)
	tenantIsolationProbe(t, startRadosGateways(t, conf, 1)[0])
}
