//go:build schedgate_mutant_prebind_no_recheck

package networkslots

import "testing"

func TestSkipPreBindRecheckOnWithTag(t *testing.T) {
	if !skipPreBindRecheck {
		t.Fatal("skipPreBindRecheck is off although the schedgate_mutant_prebind_no_recheck tag is set")
	}
}
