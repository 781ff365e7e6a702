//go:build !schedgate_mutant_prebind_no_recheck

package networkslots

// skipPreBindRecheck is false in normal builds. See prebind_no_recheck.go for the deliberately
// broken mutant build.
const skipPreBindRecheck = false
