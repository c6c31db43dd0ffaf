package store_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/tether/tether/internal/store"
	"github.com/tether/tether/internal/store/storetest"
)

// TestInboxPages: every waiting item once, newest first, whatever the
// page size; nothing that does not wait.
func TestInboxPages(t *testing.T) {
	st := storetest.Open(t, "")
	want, err := storetest.InboxFixture(st, 60)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, limit := range []int{1, 7, 200} {
		t.Run(fmt.Sprint("limit ", limit), func(t *testing.T) {
			seen := map[string]bool{}
			kinds := map[store.InboxKind]int{}
			var last *store.InboxItem
			token := ""
			for {
				page, next, err := st.Inbox(ctx, store.InboxFilter{Limit: limit, After: token})
				if err != nil {
					t.Fatal(err)
				}
				for _, it := range page {
					if seen[it.ID] {
						t.Fatalf("item %s twice", it.ID)
					}
					seen[it.ID] = true
					kinds[it.Kind]++
					if last != nil && (it.At.After(last.At) || it.At.Equal(last.At) && it.ID > last.ID) {
						t.Fatalf("item %s after %s: not newest first", it.ID, last.ID)
					}
					last = &it
					if (it.Kind == store.InboxPermission) != (it.Permission != nil) || (it.Turn != nil) != (it.Kind == store.InboxFailedTurn || it.Kind == store.InboxInterruptedTurn) {
						t.Errorf("item %s: permission %v, turn %v", it.ID, it.Permission, it.Turn)
					}
				}
				if next == "" {
					break
				}
				token = next
			}
			if len(seen) != want {
				t.Errorf("got %d items, want %d", len(seen), want)
			}
			wantKinds := map[store.InboxKind]int{store.InboxPermission: 10, store.InboxInterruptedTurn: 10, store.InboxNeedsCredentials: 10, store.InboxFailedTurn: 10}
			for k, n := range wantKinds {
				if kinds[k] != n {
					t.Errorf("%s items: got %d, want %d", k, kinds[k], n)
				}
			}
		})
	}
}

// BenchmarkInbox10kSessions reads the inbox's first page (50 items) with
// 10,000 sessions, 6,667 of them waiting (issue 33's figure: GET /inbox
// with 10,000 sessions ≤ 50 ms; the HTTP layer adds the page's JSON).
func BenchmarkInbox10kSessions(b *testing.B) {
	st := storetest.Open(b, "")
	if _, err := storetest.InboxFixture(st, 10000); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		page, _, err := st.Inbox(ctx, store.InboxFilter{})
		if err != nil || len(page) != store.DefaultInboxPageSize {
			b.Fatalf("inbox: %d items, %v", len(page), err)
		}
	}
}
