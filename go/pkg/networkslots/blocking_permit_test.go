//go:build schedgate_mutant_blocking_permit

package networkslots

import "testing"

func TestBlockingPermitOnWithTag(t *testing.T) {
	if !blockingPermit {
		t.Fatal("blockingPermit is off although the schedgate_mutant_blocking_permit tag is set")
	}
}
