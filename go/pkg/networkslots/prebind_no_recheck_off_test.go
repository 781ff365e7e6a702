//go:build !schedgate_mutant_prebind_no_recheck

package networkslots

import "testing"

func TestSkipPreBindRecheckOffByDefault(t *testing.T) {
	if skipPreBindRecheck {
		t.Fatal("skipPreBindRecheck is on without the schedgate_mutant_prebind_no_recheck tag")
	}
}
