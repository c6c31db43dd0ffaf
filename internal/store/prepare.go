package store

import (
	"context"

	"gorm.io/gorm"
)

// prepareOnPool puts queries into gorm's statement cache as statements of
// the connection pool. gorm caches a statement first prepared inside a
// transaction as that transaction's, and database/sql then prepares it
// anew in every later transaction (sql.Tx.StmtContext on a statement that
// belongs to another transaction): on the writer, whose work is all inside
// transactions, every chunk paid for compiling its SQL again. A pool
// statement is prepared once per connection and reused.
func prepareOnPool(ctx context.Context, gdb *gorm.DB, queries ...string) error {
	pdb, ok := gdb.ConnPool.(*gorm.PreparedStmtDB)
	if !ok {
		return nil // statement caching is off
	}
	for _, q := range queries {
		pdb.Mux.Lock()
		if st, ok := pdb.Stmts.Get(q); ok && !st.Transaction {
			pdb.Mux.Unlock()
			continue
		}
		// New unlocks pdb.Mux once the entry is in the cache.
		if _, err := pdb.Stmts.New(ctx, q, false, pdb.ConnPool, pdb.Mux); err != nil {
			return internal(err, "prepare statement")
		}
	}
	return nil
}

// TransactionStatements is how many statements the statement cache holds
// as some transaction's: each of those is compiled again in every write
// transaction that runs it. Tests use it to check that the writer's hot
// paths (the recovery plan at every turn boundary) run only statements
// prepared once on the pool.
func (s *Store) TransactionStatements() int {
	pdb, ok := s.db.ConnPool.(*gorm.PreparedStmtDB)
	if !ok {
		return 0 // bound to a transaction, or caching is off
	}
	pdb.Mux.RLock()
	defer pdb.Mux.RUnlock()
	n := 0
	for _, q := range pdb.Stmts.Keys() {
		if st, ok := pdb.Stmts.Get(q); ok && st.Transaction {
			n++
		}
	}
	return n
}
