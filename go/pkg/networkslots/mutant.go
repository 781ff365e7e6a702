package networkslots

import (
	"fmt"
	"os"
	"strings"
)

// mutant names the deliberately broken build this binary is, or "" for the
// correct build. Nothing in the code sets it: a mutant build sets it at link
// time, as schedgate.toolchain does for the binaries in its MUTANT_BUILDS:
//
//	go build -ldflags "-X schedgate/pkg/networkslots.mutant=leaky-unreserve" ./cmd/kube-scheduler
//
// The known names are the mutantName constants below. New refuses any other
// non-empty value, so a misspelt name never passes for the correct build.
var mutant string

// mutantName is one known value of mutant.
type mutantName string

// The mutants. THESE ARE DELIBERATELY BROKEN BUILDS for mutation testing:
// each breaks one thing the scenario suite must notice.
const (
	// leakyUnreserve makes Unreserve keep the pod's holding instead of
	// releasing it.
	//
	// THIS IS A DELIBERATELY BROKEN BUILD for mutation testing: built with
	// mutant=leaky-unreserve, slots of pods that fail after Reserve (permit
	// timeout/reject, pre-bind or bind failure) leak, so nodes fill up with
	// phantom holdings. A test suite that passes against this build is not
	// checking that failed pods give their slots back.
	leakyUnreserve mutantName = "leaky-unreserve"

	// blockingPermit makes the permit-hold fault block inside Permit
	// (polling the pod until the hold is lifted) instead of returning Wait.
	//
	// THIS IS A DELIBERATELY BROKEN BUILD for mutation testing: built with
	// mutant=blocking-permit, a held pod occupies the scheduling cycle, so
	// deleting it frees its slot in the ledger but no other pod is scheduled
	// until the hold times out. A suite that passes against this build is
	// not checking that a deleted waiting pod's slot is usable at once.
	blockingPermit mutantName = "blocking-permit"

	// prebindNoRecheck makes PreBind skip re-reading the node.
	//
	// THIS IS A DELIBERATELY BROKEN BUILD for mutation testing: built with
	// mutant=prebind-no-recheck, a pod whose node was deleted between
	// Reserve and Bind is bound to the vanished node (the API server accepts
	// a binding to a node that does not exist). A suite that passes against
	// this build is not checking that node deletion rolls back.
	prebindNoRecheck mutantName = "prebind-no-recheck"

	// memoryOnlyLedger makes the ledger in-memory state only: it is not
	// rebuilt from the pods the informer lists (adds and updates are
	// ignored; only this process's Reserve/PostBind and pod deletions change
	// it), and Filter trusts it instead of the scheduler's snapshot.
	//
	// THIS IS A DELIBERATELY BROKEN BUILD for mutation testing: built with
	// mutant=memory-only-ledger, a restarted scheduler forgets every pod
	// bound before it started and places pods on full nodes. A suite that
	// passes against this build is not checking a restart mid-wait.
	memoryOnlyLedger mutantName = "memory-only-ledger"
)

// knownMutants is every mutant with one line on what it breaks, in the
// order error messages list them.
var knownMutants = []struct {
	name   mutantName
	breaks string
}{
	{leakyUnreserve, "Unreserve keeps the pod's holding, so slots of pods that fail after Reserve leak"},
	{blockingPermit, "a permit-hold pod blocks inside Permit instead of waiting, holding the scheduling cycle"},
	{prebindNoRecheck, "PreBind does not re-read the node, so a pod is bound to a node deleted while it waited"},
	{memoryOnlyLedger, "the ledger is never rebuilt from bound pods and Filter trusts it over the snapshot"},
}

// on says whether this binary is the mutant m.
func (m mutantName) on() bool { return mutant == string(m) }

// describeMutant returns what the mutant name breaks, and whether it is known.
func describeMutant(name string) (string, bool) {
	for _, m := range knownMutants {
		if string(m.name) == name {
			return m.breaks, true
		}
	}
	return "", false
}

// checkMutant returns an error unless name is "" or a known mutant.
func checkMutant(name string) error {
	if _, ok := describeMutant(name); ok || name == "" {
		return nil
	}
	known := make([]string, len(knownMutants))
	for i, m := range knownMutants {
		known[i] = string(m.name)
	}
	return fmt.Errorf("%s: unknown mutant build %q (set with -ldflags -X); the known mutants are %s",
		Name, name, strings.Join(known, ", "))
}

// mutantBanner is the line a mutant binary prints on stderr when it starts,
// before anything else runs ("" for the correct build). The toolchain reads
// it from `kube-scheduler --version` to check that each mutant build really
// is that mutant: the linker ignores an -X naming a variable that does not
// exist, which would otherwise give a correct build under a mutant's name.
func mutantBanner(name string) string {
	if name == "" {
		return ""
	}
	breaks, ok := describeMutant(name)
	if !ok {
		return fmt.Sprintf("schedgate: %v; the plugin will refuse to start", checkMutant(name))
	}
	return fmt.Sprintf("schedgate: THIS IS A DELIBERATELY BROKEN BUILD: %s mutant %s: %s", Name, name, breaks)
}

func init() {
	if b := mutantBanner(mutant); b != "" {
		fmt.Fprintln(os.Stderr, b)
	}
}
