package tests

import (
	"encoding/json"
	"os"
	"sync"
	"syscall"
	"testing"
)

// jsonField finds the first string field name anywhere in a JSON document.
func jsonField(t *testing.T, doc, name string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(doc), &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, doc)
	}
	var find func(any) (string, bool)
	find = func(v any) (string, bool) {
		switch x := v.(type) {
		case map[string]any:
			if s, ok := x[name].(string); ok {
				return s, true
			}
			for _, c := range x {
				if s, ok := find(c); ok {
					return s, true
				}
			}
		case []any:
			for _, c := range x {
				if s, ok := find(c); ok {
					return s, true
				}
			}
		}
		return "", false
	}
	s, ok := find(v)
	if !ok {
		t.Fatalf("no %q in %s", name, doc)
	}
	return s
}

// loadWorkers runs body(w, i) for i = 0, 1, ... in n goroutines until the
// returned stop is called; stop waits for every worker to return.
func loadWorkers(n int, body func(w, i int)) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < n; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				body(w, i)
			}
		}()
	}
	var once sync.Once
	return func() { once.Do(func() { close(done); wg.Wait() }) }
}

// diskUsage is the bytes fi occupies on disk (st_blocks × 512).
func diskUsage(fi os.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return fi.Size()
}
