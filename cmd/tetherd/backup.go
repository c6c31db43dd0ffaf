package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/tether/tether/internal/store"
)

// backup is `tetherd backup [--data-dir DIR] [--force] OUTPUT`: a
// consistent copy of the data dir's database, taken with SQLite's online
// backup API, safe while the daemon runs.
func backup(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("tetherd backup", flag.ContinueOnError)
	dataDir := fs.String("data-dir", env("TETHER_DATA_DIR", defaultDataDir()), "data directory of the daemon to back up [TETHER_DATA_DIR]")
	force := fs.Bool("force", false, "replace OUTPUT if it exists")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: tetherd backup [--data-dir DIR] [--force] OUTPUT")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return errors.New("backup: want exactly one OUTPUT file")
	}
	if *dataDir == "" {
		return errors.New("no data directory: set --data-dir, TETHER_DATA_DIR or HOME")
	}
	out := fs.Arg(0)
	if err := absPaths(dataDir, &out); err != nil {
		return err
	}
	info, err := store.Backup(ctx, filepath.Join(*dataDir, "tether.db"), out, *force)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "backup of %s written to %s: %d bytes, %d sessions, %d events, integrity ok, took %s\n",
		filepath.Join(*dataDir, "tether.db"), info.Path, info.Bytes, info.Sessions, info.Events, info.Took.Round(1e6))
	return nil
}
