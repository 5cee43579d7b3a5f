// Package debuginfod fetches separate debug files by build ID from
// debuginfod servers (elfutils' debuginfod, the servers distributions run)
// and keeps them in debuginfod-client's cache layout, so that dstar,
// gdb, perf and eu-stack share what any of them fetched.
//
// It is configured as debuginfod-client is: DEBUGINFOD_URLS, the servers,
// separated by spaces; DEBUGINFOD_CACHE_PATH, else
// $XDG_CACHE_HOME/debuginfod_client, else ~/.cache/debuginfod_client, the
// cache, where a build ID's debug file is <cache>/<buildid>/debuginfo;
// DEBUGINFOD_TIMEOUT, the seconds a server may go without sending
// anything before it is given up (10 by default). Fetching is
// synchronous here; callers that must not wait run it in the background.
package debuginfod

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// DefaultTimeout is how long a server may stay silent when
// DEBUGINFOD_TIMEOUT does not say.
const DefaultTimeout = 10 * time.Second

// Client fetches debug files from its servers into its cache.
type Client struct {
	URLs    []string      // servers, in the order tried
	Cache   string        // cache directory
	Timeout time.Duration // silence after which a server is given up
}

// FromEnv returns the client the environment configures, or nil when
// DEBUGINFOD_URLS names no server.
func FromEnv() *Client {
	urls := strings.Fields(os.Getenv("DEBUGINFOD_URLS"))
	if len(urls) == 0 {
		return nil
	}
	c := &Client{URLs: urls, Cache: cacheDir(), Timeout: DefaultTimeout}
	if s, err := strconv.ParseFloat(os.Getenv("DEBUGINFOD_TIMEOUT"), 64); err == nil && s > 0 {
		c.Timeout = time.Duration(s * float64(time.Second))
	}
	return c
}

// cacheDir is debuginfod-client's cache directory.
func cacheDir() string {
	if d := os.Getenv("DEBUGINFOD_CACHE_PATH"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "debuginfod_client")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = "/root"
	}
	return filepath.Join(home, ".cache", "debuginfod_client")
}

// Path is where the debug file of build ID id is cached.
func (c *Client) Path(id []byte) string {
	return filepath.Join(c.Cache, hex.EncodeToString(id), "debuginfo")
}

// Cached returns the cached debug file of build ID id, if there is one.
func (c *Client) Cached(id []byte) (string, bool) {
	p := c.Path(id)
	st, err := os.Stat(p)
	return p, err == nil && st.Mode().IsRegular() && st.Size() > 0
}

// ErrNotFound says that no server has the debug file.
var ErrNotFound = errors.New("no debuginfod server has it")

// Fetch returns the path of the debug file of build ID id: the cached one,
// or the first server's that has it, cached first. Each server may stay
// silent for c.Timeout at most; ctx bounds the whole.
func (c *Client) Fetch(ctx context.Context, id []byte) (string, error) {
	if len(id) == 0 {
		return "", errors.New("debuginfod: no build ID")
	}
	if p, ok := c.Cached(id); ok {
		return p, nil
	}
	var errs []error
	for _, u := range c.URLs {
		err := c.fetchFrom(ctx, u, id)
		if err == nil {
			return c.Path(id), nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return "", fmt.Errorf("debuginfod: build ID %x: %w", id, errors.Join(append([]error{ErrNotFound}, errs...)...))
}

// fetchFrom fetches id's debug file from the server at base into the
// cache: into a temporary file first, renamed into place once whole, so
// that a reader never sees half a file.
func (c *Client) fetchFrom(ctx context.Context, base string, id []byte) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The timeout is of silence, as debuginfod-client's: a large debug
	// file arriving steadily is not cut off.
	idle := time.AfterFunc(c.Timeout, cancel)
	defer idle.Stop()
	url := strings.TrimRight(base, "/") + "/buildid/" + hex.EncodeToString(id) + "/debuginfo"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("User-Agent", "dstar")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return silence(err, idle, c.Timeout)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	dir := filepath.Dir(c.Path(id))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".debuginfo.*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a rename, there is nothing left to remove
	_, err = io.Copy(tmp, &progress{r: resp.Body, idle: idle, d: c.Timeout})
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", url, silence(err, idle, c.Timeout))
	}
	return os.Rename(tmp.Name(), c.Path(id))
}

// silence names a failure caused by the idle timer's firing.
func silence(err error, idle *time.Timer, d time.Duration) error {
	if errors.Is(err, context.Canceled) && !idle.Stop() {
		return fmt.Errorf("no answer for %v: %w", d, err)
	}
	return err
}

// progress restarts the idle timer whenever data arrives.
type progress struct {
	r    io.Reader
	idle *time.Timer
	d    time.Duration
}

func (p *progress) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if n > 0 {
		p.idle.Reset(p.d)
	}
	return n, err
}
