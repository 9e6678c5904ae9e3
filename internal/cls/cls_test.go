package cls

import (
	"strings"
	"testing"

	"github.com/cairn-s3/cairn/internal/objstore"
)

func TestRegisterAll(t *testing.T) {
	reg := objstore.NewRegistry()
	RegisterAll(reg)
	got := strings.Join(reg.Classes(), " ")
	for _, m := range []string{"lock.assert_locked", "version.inc", "2pc_queue.reserve", "2pc_queue.remove_markers", "log.append"} {
		if !strings.Contains(got, m) {
			t.Errorf("%s not registered (have %s)", m, got)
		}
	}
}
