package tests

import (
	"encoding/json"
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
