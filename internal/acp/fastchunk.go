package acp

import (
	"bytes"
	"encoding/json"

	sdk "github.com/coder/acp-go-sdk"
)

// textChunkLine is the shape of the notification an agent sends most: a
// session/update with a text chunk of a message or thought. Decoding it
// in one pass into this struct is the fast path of inbound.route; the
// SDK's decoder validates and decodes the same bytes five or six times
// (envelope, notification, the update into a map and then its variant, the
// content block likewise), which was a third of the daemon's CPU per
// streamed chunk. The _meta and annotations members are captured only to
// send a line that has them down the SDK's path, which checks them.
type textChunkLine struct {
	ID     *json.RawMessage `json:"id"`
	Method string           `json:"method"`
	Params struct {
		Meta      json.RawMessage `json:"_meta"`
		SessionID string          `json:"sessionId"`
		Update    struct {
			Meta          json.RawMessage `json:"_meta"`
			SessionUpdate string          `json:"sessionUpdate"`
			MessageID     *string         `json:"messageId"`
			Content       struct {
				Meta        json.RawMessage `json:"_meta"`
				Annotations json.RawMessage `json:"annotations"`
				Type        string          `json:"type"`
				Text        string          `json:"text"`
			} `json:"content"`
		} `json:"update"`
	} `json:"params"`
}

// chunkMarker is in every line the fast path can take; other lines skip
// its decode.
var chunkMarker = []byte(`_chunk"`)

// fastTextChunk decodes line when it is a plain text chunk of an agent
// message or thought, giving the Update translate would give for it;
// ok=false sends the line down the SDK's path (anything else, or anything
// the SDK might judge differently: members it validates, a decode error).
func fastTextChunk(line []byte) (Update, bool) {
	if !bytes.Contains(line, chunkMarker) {
		return Update{}, false
	}
	var m textChunkLine
	if json.Unmarshal(line, &m) != nil || m.ID != nil || m.Method != sdk.ClientMethodSessionUpdate {
		return Update{}, false
	}
	p, up := &m.Params, &m.Params.Update
	if p.Meta != nil || up.Meta != nil || up.Content.Meta != nil || up.Content.Annotations != nil || up.Content.Type != "text" {
		return Update{}, false
	}
	kind := UpdateKind(up.SessionUpdate)
	if kind != UpdateAgentMessage && kind != UpdateAgentThought {
		return Update{}, false
	}
	return Update{SessionID: p.SessionID, Kind: kind, Text: up.Content.Text, MessageID: deref(up.MessageID)}, true
}
