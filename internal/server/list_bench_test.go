package server

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkGatewayList1000 is one signed ListObjectsV2 page of 1,000 keys
// through the gateway's handler (auth, driver, index, XML), over a bucket
// of 1,000 small objects; cpu-ns/op is the process's CPU time per page.
// Run with -cpu 1 (docs/bench/scale.md, "List page vs shard count").
func BenchmarkGatewayList1000(b *testing.B) {
	g := benchGateway(b)
	at := time.Now().UTC()
	if code := serveRaw(b, g.Handler, rawSigned(b, "PUT", "/listbench", at)); code != 200 {
		b.Fatalf("create bucket: %d", code)
	}
	data := []byte("0123456789abcdef")
	for i := range 1000 {
		path := fmt.Sprintf("/listbench/o/%016x", uint64(i)*0x9e3779b97f4a7c15)
		if code := serveRaw(b, g.Handler, rawPut(b, path, data, at)); code != 200 {
			b.Fatalf("put: %d", code)
		}
	}
	for _, c := range []struct{ name, query string }{
		{"v2", "?list-type=2"},
		{"v2-owner", "?list-type=2&fetch-owner=true"},
		{"v1", ""},
	} {
		b.Run(c.name, func(b *testing.B) {
			req := rawSigned(b, "GET", "/listbench"+c.query, at)
			b.ReportAllocs()
			start := cpuTime()
			for b.Loop() {
				if code := serveRaw(b, g.Handler, req); code != 200 {
					b.Fatalf("list: %d", code)
				}
			}
			b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
		})
	}
}
