//go:build schedgate_mutant_prebind_no_recheck

package networkslots

// skipPreBindRecheck makes PreBind skip re-reading the node.
//
// THIS IS A DELIBERATELY BROKEN BUILD for mutation testing: built with
// -tags schedgate_mutant_prebind_no_recheck, a pod whose node was deleted
// between Reserve and Bind is bound to the vanished node (the API server
// accepts a binding to a node that does not exist). A suite that passes
// against this build is not checking that node deletion rolls back.
const skipPreBindRecheck = true
