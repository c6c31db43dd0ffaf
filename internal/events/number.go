package events

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
)

// How a draft becomes an event in the writer's transaction: its type
// checked against its payload, the ids it names filled in, its number in
// its session (and globally) taken, and its payload encoded.

// latestKey names the last event of one type in one session.
type latestKey struct{ session, typ string }

// number assigns the global id and, for session events, the next seq. A
// Latest draft whose payload equals the session's last event of its type
// is dropped (keep false): nothing changed.
//
// In a cluster (fenced not nil) a session whose lease this transaction has
// not checked yet is read from the database, not the caches, and marked
// for the check before the commit.
func (w *Writer) number(tx *store.Store, seqs map[string]int64, latest map[latestKey]string, d Draft, now time.Time, fenced map[string]bool) (store.Event, bool, error) {
	if fenced != nil && d.SessionID != "" {
		if _, seen := fenced[d.SessionID]; !seen {
			fenced[d.SessionID] = false
			delete(w.lastSeq, d.SessionID)
			w.dropLatest(d.SessionID)
		}
	}
	payload, err := marshalPayload(d)
	if err != nil {
		return store.Event{}, false, err
	}
	if d.Latest {
		w.latestTypes[d.Type] = true
	}
	if d.SessionID != "" && w.latestTypes[d.Type] {
		key := latestKey{d.SessionID, d.Type}
		last, known := latest[key]
		if !known {
			last, known = w.latest[key]
		}
		if !known {
			prev, err := tx.LastSessionEvent(writerCtx, d.SessionID, d.Type)
			if err != nil {
				return store.Event{}, false, err
			}
			last = string(prev)
		}
		if d.Latest && last == string(payload) {
			return store.Event{}, false, nil
		}
		latest[key] = string(payload)
	}
	w.lastID++
	e := store.Event{ID: w.lastID, SessionID: d.SessionID, Type: d.Type, PromptID: d.PromptID,
		Global: IsGlobal(d.Type), Payload: payload, Time: now, HostOffset: d.HostOffset}
	if d.SessionID != "" {
		seq, ok := seqs[d.SessionID]
		if !ok {
			seq, ok = w.lastSeq[d.SessionID]
		}
		if !ok {
			if seq, err = tx.MaxSessionSeq(writerCtx, d.SessionID); err != nil {
				return store.Event{}, false, err
			}
		}
		seq++
		seqs[d.SessionID] = seq
		e.Seq = seq
	}
	return e, true, nil
}

// marshalPayload encodes the payload, adding the draft's sessionId, taskId
// and promptId where the payload leaves them out, so every event names what
// it is about.
func marshalPayload(d Draft) (json.RawMessage, error) {
	p := d.Payload
	if p == nil {
		p = map[string]any{}
	}
	switch v := p.(type) {
	case *session.MessageChunkData:
		// The exact type only: a type embedding it has members of its own.
		fillCommon(&v.EventCommon, d)
		return appendChunkJSON(make([]byte, 0, chunkJSONSize(v)), v), nil
	case session.EventPayload:
		fillCommon(v.Base(), d)
	case map[string]any:
		setMissing(v, "sessionId", d.SessionID)
		setMissing(v, "taskId", d.TaskID)
		setMissing(v, "promptId", d.PromptID)
	default:
		// A payload value (not a pointer) would lose its common members.
		return nil, errcode.New(errcode.Internal, "event %s payload is a %T, want a Payload pointer or a map", d.Type, p)
	}
	b, err := json.Marshal(p)
	if err != nil {
		return nil, errors.Join(errcode.New(errcode.Internal, "event %s payload cannot be encoded", d.Type), err)
	}
	return b, nil
}

// typeDraft names a domain payload's draft by its payload's type when the
// emitter left Type empty, and refuses a draft whose Type names another
// type than its payload's: the log must not store a payload under a type
// that decodes to something else.
func typeDraft(d *Draft) error {
	p, ok := d.Payload.(session.EventPayload)
	if !ok {
		return nil
	}
	switch t := p.EventType(); {
	case d.Type == "":
		d.Type = t
	case d.Type != t:
		return errcode.New(errcode.Internal, "event %s has a %s payload (%T)", d.Type, t, p)
	}
	return nil
}

// fillDraft sets the common members a domain payload leaves empty from
// its draft, as encoding it will.
func fillDraft(d Draft) {
	if p, ok := d.Payload.(session.EventPayload); ok {
		fillCommon(p.Base(), d)
	}
}

// fillCommon sets the members the payload leaves empty from the draft.
func fillCommon(c *session.EventCommon, d Draft) {
	if c.SessionID == "" {
		c.SessionID = d.SessionID
	}
	if c.TaskID == "" {
		c.TaskID = d.TaskID
	}
	if c.PromptID == "" {
		c.PromptID = d.PromptID
	}
}

// setMissing sets m[k] to id unless m has k or id is empty.
func setMissing(m map[string]any, k, id string) {
	if _, set := m[k]; !set && id != "" {
		m[k] = id
	}
}
