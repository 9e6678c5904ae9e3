package iamapi

import (
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// TestCompatibilityTable holds docs/s3-compatibility.md's IAM table to
// the actions served: every served action has a "supported" row, every
// such row is served, and rows are sorted.
func TestCompatibilityTable(t *testing.T) {
	data, err := os.ReadFile("../../../docs/s3-compatibility.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile(`^\| ([A-Za-z]+) \| supported \|`)
	var rows []string
	in := false
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "## ") {
			in = line == "## IAM API"
			continue
		}
		if m := row.FindStringSubmatch(line); in && m != nil {
			rows = append(rows, m[1])
		}
	}
	if !sort.StringsAreSorted(rows) {
		t.Errorf("IAM rows are not sorted: %v", rows)
	}
	documented := map[string]bool{}
	for _, r := range rows {
		documented[r] = true
		if actions[r] == nil {
			t.Errorf("%s is documented as supported but not served", r)
		}
	}
	for a := range actions {
		if !documented[a] {
			t.Errorf("%s is served but has no row in the IAM table", a)
		}
	}
}
