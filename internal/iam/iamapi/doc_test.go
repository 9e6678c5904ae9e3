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
	served := map[string]map[string]bool{"## IAM API": {}, "## STS API": {}}
	for a := range actions {
		served["## IAM API"][a] = true
	}
	for a := range stsActions {
		served["## STS API"][a] = true
	}
	row := regexp.MustCompile(`^\| ([A-Za-z]+) \| supported \|`)
	for section, want := range served {
		var rows []string
		in := false
		for _, line := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(line, "## ") {
				in = line == section
				continue
			}
			if m := row.FindStringSubmatch(line); in && m != nil {
				rows = append(rows, m[1])
			}
		}
		if !sort.StringsAreSorted(rows) {
			t.Errorf("%s rows are not sorted: %v", section, rows)
		}
		documented := map[string]bool{}
		for _, r := range rows {
			documented[r] = true
			if !want[r] {
				t.Errorf("%s: %s is documented as supported but not served", section, r)
			}
		}
		for a := range want {
			if !documented[a] {
				t.Errorf("%s: %s is served but has no row", section, a)
			}
		}
	}
}
