//go:build kubernetes1.35

package networkslots

// 1.35's WaitingPod: Reject returns nothing and there is no Preempt.
func (p *fakeWaitingPod) Reject(string, string) {}
