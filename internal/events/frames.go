package events

// Control frames: stream data, never stored (no Common members).

// ResyncRequiredData is the data of resync_required: the client's cursor
// cannot be served; epoch and cursor say where the log stands.
type ResyncRequiredData struct {
	Reason string `json:"reason"`
	Epoch  string `json:"epoch"`
	Cursor string `json:"cursor"`
}

// ReplayCompleteData is the data of replay_complete: the replay reached
// cursor, live events follow.
type ReplayCompleteData struct {
	Cursor string `json:"cursor"`
}

// StreamLaggedData is the data of stream_lagged: the client fell behind at
// cursor and should reconnect from it.
type StreamLaggedData struct {
	Cursor string `json:"cursor"`
}
