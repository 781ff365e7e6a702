//go:build !schedgate_mutant_leaky_unreserve

package networkslots

// leakyUnreserve is false in normal builds: Unreserve releases the holding.
// See leaky_unreserve.go for the deliberately broken mutant build.
const leakyUnreserve = false
