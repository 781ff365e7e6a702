//go:build schedgate_mutant_leaky_unreserve

package networkslots

// leakyUnreserve makes Unreserve keep the pod's holding instead of releasing
// it.
//
// THIS IS A DELIBERATELY BROKEN BUILD for mutation testing: built with
// -tags schedgate_mutant_leaky_unreserve, slots of pods that fail after
// Reserve (permit timeout/reject, pre-bind or bind failure) leak, so nodes
// fill up with phantom holdings. A test suite that passes against this
// build is not checking that failed pods give their slots back.
const leakyUnreserve = true
