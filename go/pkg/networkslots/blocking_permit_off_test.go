//go:build !schedgate_mutant_blocking_permit

package networkslots

import "testing"

func TestBlockingPermitOffByDefault(t *testing.T) {
	if blockingPermit {
		t.Fatal("blockingPermit is on without the schedgate_mutant_blocking_permit tag")
	}
}
