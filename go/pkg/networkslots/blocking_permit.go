//go:build schedgate_mutant_blocking_permit

package networkslots

// blockingPermit makes the permit-hold fault block inside Permit (polling
// the pod until the hold is lifted) instead of returning Wait.
//
// THIS IS A DELIBERATELY BROKEN BUILD for mutation testing: built with
// -tags schedgate_mutant_blocking_permit, a held pod occupies the scheduling
// cycle, so deleting it frees its slot in the ledger but no other pod is
// scheduled until the hold times out. A suite that passes against this build
// is not checking that a deleted waiting pod's slot is usable at once.
const blockingPermit = true
