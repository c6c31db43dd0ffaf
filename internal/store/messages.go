package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/tether/tether/internal/session"
	"gorm.io/gorm"
)

// messages -----------------------------------------------------------------------
//
// A message's text is its row's text followed by its chunk rows
// (message_chunks) in id order. Streamed chunks are appended as rows because
// SQLite rewrites a whole row on UPDATE: concatenating onto the message row
// made every chunk cost the length of its message. The chunks of a message
// are folded into its row once, when the session's next message starts (or
// by FoldMessageChunks at start-up), so only the session's latest message
// ever has chunk rows, and every read merges them.

// The statements of the chunk path, prepared once at Open (prepareOnPool)
// and run through the connection pool's own Exec/QueryRow, without gorm's
// callbacks and reflection: on the writer they run once per chunk. Plain
// statements: one INSERT ... SELECT ... RETURNING measured several times
// slower than a SELECT and an INSERT.
const (
	// latestMessageSQL reads the session's latest message without its text.
	latestMessageSQL = `SELECT id, prompt_id, role FROM messages WHERE session_id = ? ORDER BY id DESC LIMIT 1`
	appendChunkSQL   = `INSERT INTO message_chunks (message_id, text, created_at) VALUES (?, ?, ?)`
	insertMessageSQL = `INSERT INTO messages (id, session_id, prompt_id, role, text, content, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`
	// foldMessageSQL folds in SQLite itself: reading the chunks back into
	// Go cost a round trip per row at every message boundary.
	foldMessageSQL = `UPDATE messages SET
		text = text || (SELECT group_concat(text, '' ORDER BY id) FROM message_chunks WHERE message_id = ?1),
		updated_at = (SELECT created_at FROM message_chunks WHERE message_id = ?1 ORDER BY id DESC LIMIT 1)
		WHERE id = ?1 AND EXISTS (SELECT 1 FROM message_chunks WHERE message_id = ?1)`
	dropChunksSQL = `DELETE FROM message_chunks WHERE message_id = ?`
	// appendTextSQL appends text that never became chunk rows.
	appendTextSQL = `UPDATE messages SET text = text || ?2, updated_at = ?3 WHERE id = ?1`
)

// messageStatements are the statements prepareOnPool prepares at Open.
var messageStatements = func() []string {
	out := []string{latestMessageSQL, insertMessageSQL, foldMessageSQL, dropChunksSQL, appendTextSQL}
	for _, n := range chunkInsertSizes {
		out = append(out, appendChunksSQL[n])
	}
	return out
}()

// latestMessage is the head of a session's latest message.
type latestMessage struct {
	ID       int64
	PromptID string
	Role     string
}

// latestOf returns the session's latest message, if it has one.
func latestOf(db *gorm.DB, sessionID string) (latestMessage, bool, error) {
	var m latestMessage
	err := db.Statement.ConnPool.QueryRowContext(db.Statement.Context, bindFor(db, latestMessageSQL), sessionID).Scan(&m.ID, &m.PromptID, &m.Role)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return latestMessage{}, false, nil
	case err != nil:
		return latestMessage{}, false, internal(err, "read latest message")
	}
	return m, true, nil
}

// execFast runs one of the statements above on db's connection or
// transaction.
func execFast(db *gorm.DB, query string, args ...any) (sql.Result, error) {
	return db.Statement.ConnPool.ExecContext(db.Statement.Context, bindFor(db, query), args...)
}

// NewMessageID reserves the id of a message about to be added (AddMessage
// with Message.ID set). The session actor takes it before it submits the
// message to the writer, so that the chunks that follow can name their
// message (AppendChunk) without reading it back, and so that a batch the
// writer redoes writes the same rows. Ids come from one counter per
// database, seeded at Open from the highest stored id and used by every
// insert, so a reserved id is never taken by another message; an id whose
// write failed is simply never used. On SQLite one open Store writes the
// database; on PostgreSQL, where several nodes write it, ids come from
// the database's sequence (message_ids), one round trip each, so that ids
// of every node grow together.
func (s *Store) NewMessageID(ctx context.Context) (int64, error) {
	if s.dialect != DialectPostgres {
		return s.msgIDs.Add(1), nil
	}
	var id int64
	if err := scanRow(s.db.WithContext(ctx).Raw(`SELECT nextval('message_ids')`), &id); err != nil {
		return 0, internal(err, "new message id")
	}
	return id, nil
}

// AppendChunk appends streamed text to message messageID, which the caller
// (the actor that holds the session's open message) knows, with no read,
// so a chunk costs the same whatever its message holds already. Inside a
// transaction (the writer's batch) the row is only queued: the queue goes
// to SQLite in multi-row INSERTs (flushChunks) when the transaction ends,
// or before anything in it reads or folds chunks, so the batch's chunks
// cost a few statements rather than one each. An unknown message id fails
// (foreign key), then or at the flush.
func (s *Store) AppendChunk(ctx context.Context, messageID int64, text string) error {
	c := pendingChunk{messageID: messageID, text: text, at: formatTime(now())}
	if s.inTx {
		s.chunks = append(s.chunks, c)
		return nil
	}
	return s.insertChunks(ctx, s.db, []pendingChunk{c})
}

// pendingChunk is a chunk row AppendChunk queued in a transaction.
type pendingChunk struct {
	messageID int64
	text, at  string
}

// flushChunks writes the chunk rows queued in this transaction.
func (s *Store) flushChunks(ctx context.Context) error {
	if len(s.chunks) == 0 {
		return nil
	}
	err := s.insertChunks(ctx, s.db, s.chunks)
	clear(s.chunks) // drop the texts
	s.chunks = s.chunks[:0]
	return err
}

// insertChunks inserts chunk rows on db's connection or transaction with
// the prepared statements of chunkInsertSizes.
func (s *Store) insertChunks(ctx context.Context, db *gorm.DB, cs []pendingChunk) error {
	bufp := chunkArgs.Get().(*[]any)
	defer chunkArgs.Put(bufp)
	conn := db.Statement.ConnPool
	for len(cs) > 0 {
		n := statementRows(len(cs), chunkInsertSizes)
		args := (*bufp)[:0]
		for _, c := range cs[:n] {
			args = append(args, c.messageID, c.text, c.at)
		}
		cs = cs[n:]
		_, err := conn.ExecContext(context.WithoutCancel(ctx), bindFor(db, appendChunksSQL[n]), args...)
		clear(args)
		*bufp = args[:0]
		if err != nil {
			return internal(err, "append message chunks")
		}
		s.stmts.Add(1)
	}
	return nil
}

// chunkInsertSizes are the row counts of insertChunks' statements,
// largest first (a queue is cut into these).
var chunkInsertSizes = []int{256, 64, 16, 4, 1}

// appendChunksSQL maps a row count of chunkInsertSizes to its statement.
var appendChunksSQL = func() map[int]string {
	m := map[int]string{}
	for _, n := range chunkInsertSizes {
		m[n] = "INSERT INTO message_chunks (message_id, text, created_at) VALUES " +
			strings.TrimSuffix(strings.Repeat("(?,?,?),", n), ",")
	}
	return m
}()

// chunkArgs recycles insertChunks' argument slices (3 per row).
var chunkArgs = sync.Pool{New: func() any {
	b := make([]any, 0, chunkInsertSizes[0]*3)
	return &b
}}

// AppendMessageChunk records a streamed text chunk for a caller that does
// not track the session's open message. If the session's latest message
// (highest id) belongs to the same prompt and role, the chunk is appended
// to it (AppendChunk); otherwise a new message starts. This keeps the
// transcript one message per uninterrupted run of a role, as users read
// it. It reads the latest message's head first, so the session actor, which
// knows its open message, calls AppendChunk instead.
//
// It returns the message the chunk went to and whether the chunk started
// it. A started message is returned whole (its text is the chunk); for a
// continued one, Text is only this chunk (reading the message back would
// cost its length) and CreatedAt is zero.
func (s *Store) AppendMessageChunk(ctx context.Context, sessionID, promptID string, role session.MessageRole, text string) (session.Message, bool, error) {
	var out session.Message
	started := false
	err := s.transaction(ctx, "append message chunk", func(tx *gorm.DB) error {
		if err := s.flushChunks(ctx); err != nil {
			return err
		}
		ts := now()
		// The latest message's leading columns only, never its text.
		last, ok, err := latestOf(tx, sessionID)
		if err != nil {
			return err
		}
		if ok && last.PromptID == promptID && last.Role == string(role) {
			if err := s.insertChunks(ctx, tx, []pendingChunk{{messageID: last.ID, text: text, at: formatTime(ts)}}); err != nil {
				return err
			}
			out = session.Message{ID: last.ID, SessionID: sessionID, PromptID: promptID, Role: role, Text: text, UpdatedAt: ts}
			return nil
		}
		row, err := s.insertMessage(tx, session.Message{
			SessionID: sessionID, PromptID: promptID, Role: role, Text: text,
			CreatedAt: ts, UpdatedAt: ts,
		})
		out, started = toMessage(row), true
		return err
	})
	if err != nil {
		return session.Message{}, false, err
	}
	return out, started, nil
}

// AddMessage always inserts a new message (user prompts, system notices,
// the start of an agent message) and returns it with its id: m.ID when the
// caller reserved one (NewMessageID), a fresh one otherwise. Its time is
// m.CreatedAt (message.added's createdAt), now when unset.
func (s *Store) AddMessage(ctx context.Context, m session.Message) (session.Message, error) {
	if m.CreatedAt.IsZero() {
		m.CreatedAt = now()
	}
	m.UpdatedAt = m.CreatedAt
	var row messageRow
	err := s.transaction(ctx, "add message", func(tx *gorm.DB) error {
		if err := s.flushChunks(ctx); err != nil {
			return err // the fold must see this transaction's chunks
		}
		var err error
		row, err = s.insertMessage(tx, m)
		return err
	})
	if err != nil {
		return session.Message{}, err
	}
	return toMessage(row), nil
}

// StartMessage is AddMessage for the caller that owns the session's open
// message (the session actor during a turn): it names the message the new
// one closes (0 for none), whose chunks are folded into its row, so a
// message boundary costs no read of the session's latest message. m.ID is
// reserved by the caller (NewMessageID).
func (s *Store) StartMessage(ctx context.Context, m session.Message, closes int64) (session.Message, error) {
	if m.CreatedAt.IsZero() {
		m.CreatedAt = now()
	}
	m.UpdatedAt = m.CreatedAt
	var row messageRow
	err := s.transaction(ctx, "start message", func(tx *gorm.DB) error {
		if closes != 0 {
			if err := s.foldClosed(tx, closes); err != nil {
				return err
			}
		}
		var err error
		row, err = s.writeMessage(tx, m)
		return err
	})
	if err != nil {
		return session.Message{}, err
	}
	return toMessage(row), nil
}

// foldClosed folds the chunks of message id, which a new message closes,
// into its row: first the chunk rows earlier transactions stored (in
// SQLite, foldMessage), then the chunks this transaction queued, from
// memory. A message that starts and ends within one writer batch — most
// of them — so never has chunk rows written only to be deleted again.
func (s *Store) foldClosed(tx *gorm.DB, id int64) error {
	text, at := s.takeQueuedChunks(id)
	if err := foldMessage(tx, id); err != nil {
		return err
	}
	if at == "" {
		return nil // nothing queued
	}
	res, err := execFast(tx, appendTextSQL, id, text, at)
	if err != nil {
		return internal(err, "fold message chunks")
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		// AppendChunk's rows would have failed their foreign key.
		return errors.Join(internal(fmt.Errorf("message %d does not exist", id), "fold message chunks"), err)
	}
	return nil
}

// takeQueuedChunks removes message id's chunks from this transaction's
// queue (keeping the others in order) and returns their text, joined, and
// the time of the last ("" when there were none).
func (s *Store) takeQueuedChunks(id int64) (text, at string) {
	var b strings.Builder
	kept := s.chunks[:0]
	for _, c := range s.chunks {
		if c.messageID != id {
			kept = append(kept, c)
			continue
		}
		b.WriteString(c.text)
		at = c.at
	}
	clear(s.chunks[len(kept):]) // drop the moved texts
	s.chunks = kept
	return b.String(), at
}

// insertMessage starts a new message of the session; the message it
// follows is complete, so its chunks are folded into its row first.
func (s *Store) insertMessage(db *gorm.DB, m session.Message) (messageRow, error) {
	last, ok, err := latestOf(db, m.SessionID)
	if err != nil {
		return messageRow{}, err
	}
	if ok {
		if err := foldMessage(db, last.ID); err != nil {
			return messageRow{}, err
		}
	}
	return s.writeMessage(db, m)
}

// writeMessage inserts m's row, under a fresh id unless m has one.
func (s *Store) writeMessage(db *gorm.DB, m session.Message) (messageRow, error) {
	if m.ID == 0 {
		id, err := s.NewMessageID(db.Statement.Context)
		if err != nil {
			return messageRow{}, err
		}
		m.ID = id
	}
	row := fromMessage(m)
	_, err := execFast(db, insertMessageSQL, row.ID, row.SessionID, row.PromptID, row.Role, row.Text, row.Content,
		formatTime(m.CreatedAt), formatTime(m.UpdatedAt))
	if err != nil {
		if isForeignKeyViolation(err) {
			return messageRow{}, sessionNotFound(m.SessionID)
		}
		return messageRow{}, internal(err, "add message")
	}
	return row, nil
}

// chunkRow is one message_chunks row as reads merge it.
type chunkRow struct {
	MessageID int64
	Text      string
	CreatedAt dbTime
}

// scanChunks reads chunk rows (message_id, text, created_at) in order.
func scanChunks(db *gorm.DB, query string, args ...any) ([]chunkRow, error) {
	rows, err := db.Statement.ConnPool.QueryContext(db.Statement.Context, bindFor(db, query), args...)
	if err != nil {
		return nil, internal(err, "read message chunks")
	}
	defer rows.Close()
	var out []chunkRow
	for rows.Next() {
		var c chunkRow
		if err := rows.Scan(&c.MessageID, &c.Text, &c.CreatedAt); err != nil {
			return nil, internal(err, "read message chunks")
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, internal(err, "read message chunks")
	}
	return out, nil
}

// foldMessage moves a message's chunk rows into its text: one rewrite of
// the row per message, not one per chunk.
func foldMessage(db *gorm.DB, messageID int64) error {
	res, err := execFast(db, foldMessageSQL, messageID)
	if err != nil {
		return internal(err, "fold message chunks")
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return err // no chunks: nothing to drop
	}
	if _, err := execFast(db, dropChunksSQL, messageID); err != nil {
		return internal(err, "fold message chunks")
	}
	return nil
}

// joinChunks concatenates chunks (of one message, in order) and returns
// the time of the last.
func joinChunks(chunks []chunkRow) (string, time.Time) {
	n := 0
	for _, c := range chunks {
		n += len(c.Text)
	}
	var b strings.Builder
	b.Grow(n)
	for _, c := range chunks {
		b.WriteString(c.Text)
	}
	return b.String(), chunks[len(chunks)-1].CreatedAt.t
}

// FoldMessageChunks folds the chunk rows of the messages of sessions into
// their text (of every session when sessions is nil); it returns how many
// messages it folded. Start-up reconciliation runs it for the messages a
// crash left open (reads merge chunks anyway, so this only keeps the
// chunk table small). A node of a cluster names the sessions it repairs:
// another node's sessions stream on, and a fold of their open messages
// beside their owner's appends and folds would lose or double chunks.
func (s *Store) FoldMessageChunks(ctx context.Context, sessions []string) (int, error) {
	var ids []int64
	if sessions != nil && len(sessions) == 0 {
		return 0, nil
	}
	err := s.transaction(ctx, "fold message chunks", func(tx *gorm.DB) error {
		if err := s.flushChunks(ctx); err != nil {
			return err
		}
		q := tx.Raw(`SELECT DISTINCT message_id FROM message_chunks ORDER BY message_id`)
		if sessions != nil {
			q = tx.Raw(`SELECT DISTINCT c.message_id FROM message_chunks c JOIN messages m ON m.id = c.message_id
				WHERE m.session_id IN ? ORDER BY c.message_id`, sessions)
		}
		if err := q.Scan(&ids).Error; err != nil {
			return internal(err, "fold message chunks")
		}
		for _, id := range ids {
			if err := foldMessage(tx, id); err != nil {
				return err
			}
		}
		return nil
	})
	return len(ids), err
}

// Chunks of a session's messages, and of one turn's, in message order.
const (
	sessionChunksSQL = `SELECT c.message_id, c.text, c.created_at FROM message_chunks c
		JOIN messages m ON m.id = c.message_id WHERE m.session_id = ? ORDER BY c.message_id, c.id`
	turnChunksSQL = `SELECT c.message_id, c.text, c.created_at FROM message_chunks c
		JOIN messages m ON m.id = c.message_id WHERE m.session_id = ? AND m.prompt_id = ? ORDER BY c.message_id, c.id`
)

// ListMessages returns the session's messages in order (by id), each with
// the text streamed into it so far.
func (s *Store) ListMessages(ctx context.Context, sessionID string) ([]session.Message, error) {
	return s.listMessages(ctx, sessionID, nil)
}

// listMessages lists the session's messages, only those of the turn
// *promptID when it is not nil.
func (s *Store) listMessages(ctx context.Context, sessionID string, promptID *string) ([]session.Message, error) {
	if !s.inTx && s.db != s.rdb {
		// Rows and chunks must come from one snapshot: a fold between the
		// two reads would lose the folded text from this answer.
		var out []session.Message
		err := s.Snapshot(ctx, func(r *Store) error {
			var err error
			out, err = r.listMessages(ctx, sessionID, promptID)
			return err
		})
		return out, err
	}
	if err := s.flushChunks(ctx); err != nil {
		return nil, err // this transaction's own chunks are read too
	}
	var rows []messageRow
	db := s.db.WithContext(ctx)
	var err error
	chunksSQL, args := sessionChunksSQL, []any{sessionID}
	if promptID != nil {
		// On the plan's path at every turn boundary: a prepared statement.
		chunksSQL, args = turnChunksSQL, append(args, *promptID)
		rows, err = queryRows[messageRow](db, func(r messageRow) messageRow { return r }, nil, turnMessagesSQL, args...)
	} else {
		err = db.Where("session_id = ?", sessionID).Order("id").Find(&rows).Error
	}
	if err != nil {
		return nil, internal(err, "list messages")
	}
	chunks, err := scanChunks(db, chunksSQL, args...)
	if err != nil {
		return nil, err
	}
	return mergeChunks(rows, chunks), nil
}

// mergeChunks appends to each message (rows, by id) the text of its chunk
// rows (by message id, then id) and takes the last one's time.
func mergeChunks(rows []messageRow, chunks []chunkRow) []session.Message {
	out := make([]session.Message, 0, len(rows))
	for _, r := range rows {
		m := toMessage(r)
		i := 0
		for i < len(chunks) && chunks[i].MessageID < m.ID {
			i++ // a chunk of no listed message: cannot happen (same snapshot)
		}
		j := i
		for j < len(chunks) && chunks[j].MessageID == m.ID {
			j++
		}
		if j > i {
			text, updated := joinChunks(chunks[i:j])
			m.Text += text
			m.UpdatedAt = updated
		}
		chunks = chunks[j:]
		out = append(out, m)
	}
	return out
}
