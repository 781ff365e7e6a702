package wrappedpreemption

import "schedgate/pkg/mutant"

// Name is the plugin's name in a profile.
const Name = "WrappedPreemption"

// Mutant is the build whose plugin evicts pods of its preemptor's own priority.
var Mutant = mutant.Define("kube-scheduler", "preempts-equal-priority",
	"DefaultPreemption evicts pods of its preemptor's own priority")

// CrashAfterUnschedulable is a scheduler that dies (a Go panic) right after it has written a GPU pod's
// Unschedulable status: its PostFilter watches the pod it could not place until the API server shows the
// verdict, then panics. A harness that reads the verdict and not the process's exit passes it.
var CrashAfterUnschedulable = mutant.Define("kube-scheduler", "crash-after-unschedulable",
	"the process panics right after writing a GPU pod's Unschedulable status")

// SilentPreemption is a PostFilter that, where upstream's finds no candidate, deletes a pod of lower priority
// from a node its preemptor cannot use (one every filter's verdict rules out for good), with no "Preempted"
// event and no DisruptionTarget condition: a victim only the API server's record shows.
var SilentPreemption = mutant.Define("kube-scheduler", "silent-preemption",
	"where preemption finds no candidate, a lower-priority pod is deleted from a node the preemptor cannot use, unreported")

// UnmarkedVictims is a preemption that deletes its victims and sends each its "Preempted" event, but never first
// writes the DisruptionTarget condition upstream's gives a victim (PreemptionByScheduler): the victim's
// controller and its owner are not told why it went. Only the API server's record of status writes shows it.
var UnmarkedVictims = mutant.Define("kube-scheduler", "preemption-unmarked-victims",
	"a preemption's victims are deleted and named by an event, with no DisruptionTarget condition first")
