package modelserver

import (
	"encoding/json"
	"strings"
)

// parseAnthropic reads a Messages API request body.
func parseAnthropic(body []byte) (Request, error) {
	var in struct {
		Model    string          `json:"model"`
		Stream   bool            `json:"stream"`
		System   json.RawMessage `json:"system"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"input_schema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return Request{}, err
	}
	req := Request{Model: in.Model, Stream: in.Stream, System: anthropicText(in.System)}
	for _, m := range in.Messages {
		req.Messages = append(req.Messages, Message{Role: m.Role, Parts: anthropicParts(m.Content)})
	}
	for _, t := range in.Tools {
		req.Tools = append(req.Tools, Tool{Name: t.Name, Schema: t.InputSchema})
	}
	return req, nil
}

// anthropicBlock is one content block of the Messages API.
type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
	// Source is an image block's picture.
	Source struct {
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
	} `json:"source"`
}

// anthropicBlocks reads content that is either a string or a block array.
func anthropicBlocks(raw json.RawMessage) []anthropicBlock {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []anthropicBlock{{Type: "text", Text: s}}
	}
	var blocks []anthropicBlock
	_ = json.Unmarshal(raw, &blocks)
	return blocks
}

// anthropicText joins the text blocks of string-or-array content.
func anthropicText(raw json.RawMessage) string {
	var parts []string
	for _, b := range anthropicBlocks(raw) {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func anthropicParts(raw json.RawMessage) []Part {
	var out []Part
	for _, b := range anthropicBlocks(raw) {
		switch b.Type {
		case "text":
			out = append(out, Part{Type: TextPart, Text: b.Text})
		case "tool_use":
			out = append(out, Part{Type: ToolUsePart, ToolCallID: b.ID, ToolName: b.Name, Input: b.Input})
		case "tool_result":
			out = append(out, Part{Type: ToolResultPart, ToolCallID: b.ToolUseID, Text: anthropicText(b.Content), IsError: b.IsError})
		case "image":
			out = append(out, Part{Type: ImagePart, MediaType: b.Source.MediaType, Data: b.Source.Data})
		}
	}
	return out
}

// parseOpenAI reads a chat-completions request body.
func parseOpenAI(body []byte) (Request, error) {
	var in struct {
		Model    string `json:"model"`
		Stream   bool   `json:"stream"`
		Messages []struct {
			Role       string          `json:"role"`
			Content    json.RawMessage `json:"content"`
			ToolCallID string          `json:"tool_call_id"`
			ToolCalls  []struct {
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
		Tools []struct {
			Function struct {
				Name       string          `json:"name"`
				Parameters json.RawMessage `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return Request{}, err
	}
	req := Request{Model: in.Model, Stream: in.Stream}
	var system []string
	for _, m := range in.Messages {
		text := openAIText(m.Content)
		switch m.Role {
		case "system", "developer":
			system = append(system, text)
			continue
		case "tool":
			req.Messages = append(req.Messages, Message{Role: "tool", Parts: []Part{{Type: ToolResultPart, ToolCallID: m.ToolCallID, Text: text}}})
			continue
		}
		msg := Message{Role: m.Role}
		if text != "" {
			msg.Parts = append(msg.Parts, Part{Type: TextPart, Text: text})
		}
		msg.Parts = append(msg.Parts, openAIImages(m.Content)...)
		for _, c := range m.ToolCalls {
			msg.Parts = append(msg.Parts, Part{Type: ToolUsePart, ToolCallID: c.ID, ToolName: c.Function.Name, Input: json.RawMessage(c.Function.Arguments)})
		}
		req.Messages = append(req.Messages, msg)
	}
	req.System = strings.Join(system, "\n")
	for _, t := range in.Tools {
		req.Tools = append(req.Tools, Tool{Name: t.Function.Name, Schema: t.Function.Parameters})
	}
	return req, nil
}

// openAIText reads content that is a string, null, or an array of parts.
func openAIText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// openAIImages reads the image_url parts of content (data: URLs, as agents
// send pasted images).
func openAIImages(raw json.RawMessage) []Part {
	var parts []struct {
		Type     string `json:"type"`
		ImageURL struct {
			URL string `json:"url"`
		} `json:"image_url"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return nil
	}
	var out []Part
	for _, p := range parts {
		if p.Type != "image_url" {
			continue
		}
		head, data, _ := strings.Cut(strings.TrimPrefix(p.ImageURL.URL, "data:"), ",")
		out = append(out, Part{Type: ImagePart, MediaType: strings.TrimSuffix(head, ";base64"), Data: data})
	}
	return out
}
