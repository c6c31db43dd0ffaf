package realagents_test

import (
	"encoding/base64"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tether/tether/internal/modelserver"
)

// TestImageAndEmbeddedFile: the blocks the Web Shell composes reach the
// agents whole (each advertises image and embeddedContext): a pasted image
// reaches claude's model as a picture of the same bytes, and qwen as an
// image it declines to send on (qwen-code forwards images only to a model
// configured as seeing them, else puts a placeholder naming the image in
// the message); an @-mentioned file embedded reaches both models as its
// text in the user's message.
//
// They go in two prompts: qwen-code 0.15.10 drops the images of a prompt
// that also embeds or links a file (its ACP prompt resolver rebuilds such
// a prompt from text and files only), as docs/agents.md says.
func TestImageAndEmbeddedFile(t *testing.T) {
	const reply = "I see a tiny picture and your notes."
	const secret = "The launch code is marigold-7."
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x02\x00\x00\x00\x90wS\xde\x00\x00\x00\x0cIDATx\x9cc\xf8\xcf\xc0\x00\x00\x03\x01\x01\x00\xc9\xfe\x92\xef\x00\x00\x00\x00IEND\xaeB`\x82")
	forEachAgent(t, func(t *testing.T, a agent) {
		w := newWorld(t, a, modelserver.Say(reply))
		sid := w.createSession()
		lastUser := func(promptID string, prompt []map[string]any) modelserver.Message {
			t.Helper()
			if code, m := w.do("POST", "/session/"+sid+"/prompt", map[string]any{"prompt": prompt, "promptId": promptID}); code != http.StatusAccepted {
				t.Fatalf("prompt %s: got %d, want 202: %v", promptID, code, m)
			}
			if turn := w.waitTurn(sid, promptID); turn["state"] != "completed" {
				t.Fatalf("turn %s: got state %v, want completed: %v", promptID, turn["state"], turn)
			}
			if got := agentText(w.transcript(sid), promptID); got != reply {
				t.Errorf("agent message of %s: got %q, want %q", promptID, got, reply)
			}
			reqs := mainRequests(w.model)
			if len(reqs) == 0 {
				t.Fatal("the model saw no request")
			}
			return reqs[len(reqs)-1].LastUser()
		}

		seen := lastUser("image", []map[string]any{
			{"type": "text", "text": "What is in the picture?"},
			{"type": "image", "mimeType": "image/png", "data": base64.StdEncoding.EncodeToString(png)},
		})
		imgs := seen.Images()
		switch a.id {
		case "qwen":
			if want := `[Unsupported image file: "image/png".`; len(imgs) != 0 || !strings.Contains(seen.Text(), want) {
				t.Fatalf("model's last user message: got %q with %d images, want qwen's placeholder %q", seen.Text(), len(imgs), want)
			}
		default:
			if len(imgs) != 1 || imgs[0].MediaType != "image/png" {
				t.Fatalf("model's images: got %+v, want one image/png", imgs)
			}
			if got, err := base64.StdEncoding.DecodeString(imgs[0].Data); err != nil || string(got) != string(png) {
				t.Errorf("model's image: got %d bytes (%v), want the %d sent", len(got), err, len(png))
			}
		}

		seen = lastUser("file", []map[string]any{
			{"type": "text", "text": "What do @notes.md say?"},
			{"type": "resource", "resource": map[string]any{"uri": "file://" + filepath.Join(w.cwd, "notes.md"), "text": secret + "\n", "mimeType": "text/plain"}},
		})
		var text strings.Builder
		for _, p := range seen.Parts {
			text.WriteString(p.Text)
		}
		if !strings.Contains(text.String(), secret) {
			t.Errorf("model's last user message: got %q, want the embedded file's text %q", text.String(), secret)
		}
	})
}
