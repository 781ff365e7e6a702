//go:build !schedgate_mutant_blocking_permit

package networkslots

// blockingPermit is false in normal builds. See blocking_permit.go for the deliberately
// broken mutant build.
const blockingPermit = false
