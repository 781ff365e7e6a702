//go:build !kubernetes1.35

package networkslots

// 1.36's WaitingPod says whether Reject and Preempt took effect (waitingpod_135_test.go: 1.35's does not).
func (p *fakeWaitingPod) Reject(string, string) bool  { return true }
func (p *fakeWaitingPod) Preempt(string, string) bool { return true }
