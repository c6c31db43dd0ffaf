package server

import (
	"context"
	"encoding/json"

	"github.com/tether/tether/internal/sessions"
)

func (h *handlers) SetSessionMode(ctx context.Context, req SetSessionModeRequestObject) (SetSessionModeResponseObject, error) {
	res, err := h.cfg.Sessions.SetMode(ctx, req.Id, req.Body.ModeId)
	if err != nil {
		return nil, err
	}
	return SetSessionMode200JSONResponse(optionChangeOf(res)), nil
}

func (h *handlers) SetSessionConfigOption(ctx context.Context, req SetSessionConfigOptionRequestObject) (SetSessionConfigOptionResponseObject, error) {
	value, err := req.Body.Value.MarshalJSON()
	if err != nil {
		return nil, err
	}
	res, err := h.cfg.Sessions.SetConfigOption(ctx, req.Id, req.OptionId, json.RawMessage(value))
	if err != nil {
		return nil, err
	}
	return SetSessionConfigOption200JSONResponse(optionChangeOf(res)), nil
}

func optionChangeOf(r sessions.OptionResult) OptionChangeResult {
	return OptionChangeResult{Applied: r.Applied, Context: sessionContextOf(r.Context)}
}
