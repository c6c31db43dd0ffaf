package sessions

import (
	"context"
	"testing"
)

// TestReconcileScanIsSetBased: start-up reconciliation of sessions at rest
// costs the same number of statements for 2 sessions as for 20 (it used to
// read three per session before the API could listen).
func TestReconcileScanIsSetBased(t *testing.T) {
	cost := map[int]int64{}
	for _, n := range []int{2, 20} {
		r := newFakeRig(t)
		for range n {
			r.storedSession(t)
		}
		before := r.st.Statements()
		res, err := r.mgr.Reconcile(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if res.Sessions != 0 {
			t.Fatalf("%d sessions at rest: got %d reconciled, want 0", n, res.Sessions)
		}
		cost[n] = r.st.Statements() - before
	}
	if cost[20] != cost[2] {
		t.Errorf("got %d statements for 20 sessions at rest and %d for 2, want the same", cost[20], cost[2])
	}
}
