package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"
)

const hostLsUsage = `usage: tetherd host ls [flags]

List the executor hosts a running daemon knows (GET /executors): name,
runtime, state, version, protocol, sessions, outbox, last contact and
address. A variable in [brackets] sets its flag's default.

Flags:
`

// hostLs is `tetherd host ls`: the executor hosts as a running daemon sees
// them (GET /executors), one line each.
func hostLs(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("tetherd host ls", flag.ContinueOnError)
	dataDir := fs.String("data-dir", env("TETHER_DATA_DIR", defaultDataDir()), "the daemon's data directory, for its token [TETHER_DATA_DIR]")
	addr := fs.String("addr", env("TETHER_ADDR", "127.0.0.1:7777"), "the daemon's address [TETHER_ADDR]")
	tokenFile := fs.String("token-file", "", "the daemon's token (default: TETHER_TOKEN, else <data-dir>/token)")
	asJSON := fs.Bool("json", false, "print GET /executors as it came")
	fs.Usage = flagUsage(fs, hostLsUsage, nil, nil)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{err: fmt.Errorf("unexpected arguments: %s (host ls takes flags only)", strings.Join(fs.Args(), " "))}
	}
	if err := absPaths(dataDir, tokenFile); err != nil {
		return err
	}
	tok := os.Getenv("TETHER_TOKEN")
	if tok == "" {
		path := *tokenFile
		if path == "" {
			path = filepath.Join(*dataDir, "token")
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("the daemon's token: %w (set TETHER_TOKEN or --token-file)", err)
		}
		tok = strings.TrimSpace(string(b))
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+*addr+"/executors", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("is tetherd running on %s? %w", *addr, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /executors: %s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	if *asJSON {
		_, err := out.Write(append(body, '\n'))
		return err
	}
	var list struct {
		Hosts []struct {
			Name, Runtime, State, Address, HostVersion, ErrorCode, ErrorMessage string
			ProtocolVersion                                                     int
			LastContactAt                                                       *time.Time
			Sessions                                                            []struct{ SessionID string }
			OutboxRecords, OutboxBytes                                          *int64
		}
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return errors.New("GET /executors: not the expected JSON")
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tRUNTIME\tSTATE\tVERSION\tPROTOCOL\tSESSIONS\tOUTBOX\tLAST CONTACT\tADDRESS")
	for _, h := range list.Hosts {
		sessions, outbox, contact := "-", "-", "never"
		if h.OutboxRecords != nil {
			sessions = fmt.Sprint(len(h.Sessions))
			outbox = fmt.Sprintf("%d records, %d B", *h.OutboxRecords, *h.OutboxBytes)
		}
		if h.LastContactAt != nil {
			contact = time.Since(*h.LastContactAt).Round(time.Second).String() + " ago"
		}
		state := h.State
		if h.ErrorCode != "" {
			state += " (" + h.ErrorCode + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", h.Name, h.Runtime, state, dash(h.HostVersion),
			h.ProtocolVersion, sessions, outbox, contact, dash(h.Address))
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
