// Command gocacheprog is a Go build cache program (the go command's
// GOCACHEPROG) that reads through to a build cache served over HTTP, and
// keeps what it stores in a directory of its own:
//
//	GOCACHEPROG="gocacheprog http://127.0.0.1:3001 /root/.cache/gocacheprog"
//
// A get asks the URL for the action's entry first (GET URL/ACTIONID, hex);
// the server answers 200 with the output's ID in the Go-Output-Id header
// and the output as the body, or 404. What the go command puts stays
// local. test/deploy's TestDockerfileBuilds bakes it into the builder image
// and serves this machine's GOCACHE to it, so that the Dockerfile's build
// finds the packages make build compiled before instead of compiling them
// again in an empty cache. A server that cannot be reached is a miss, never
// an error: the build compiles what it must.
package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// request and response are the go command's protocol
// (cmd/go/internal/cacheprog: Request, Response).
type request struct {
	ID       int64
	Command  string
	ActionID []byte `json:",omitempty"`
	OutputID []byte `json:",omitempty"`
	BodySize int64  `json:",omitempty"`
}

type response struct {
	ID            int64
	Err           string     `json:",omitempty"`
	KnownCommands []string   `json:",omitempty"`
	Miss          bool       `json:",omitempty"`
	OutputID      []byte     `json:",omitempty"`
	Size          int64      `json:",omitempty"`
	Time          *time.Time `json:",omitempty"`
	DiskPath      string     `json:",omitempty"`
}

type cache struct {
	url    string
	dir    string
	client *http.Client
	// local maps an action stored here to its output.
	local map[string]entry
	hits  int
}

type entry struct {
	output []byte
	size   int64
	path   string
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: gocacheprog URL DIR")
		os.Exit(2)
	}
	c := &cache{
		url:    os.Args[1],
		dir:    os.Args[2],
		client: &http.Client{Timeout: time.Minute},
		local:  map[string]entry{},
	}
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "gocacheprog:", err)
		os.Exit(1)
	}
	if err := c.serve(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "gocacheprog:", err)
		os.Exit(1)
	}
}

func (c *cache) serve(in io.Reader, out io.Writer) error {
	br := bufio.NewReaderSize(in, 1<<20)
	bw := bufio.NewWriter(out)
	enc := json.NewEncoder(bw)
	reply := func(r response) error {
		if err := enc.Encode(r); err != nil {
			return err
		}
		return bw.Flush()
	}
	if err := reply(response{KnownCommands: []string{"get", "put", "close"}}); err != nil {
		return err
	}
	dec := json.NewDecoder(br)
	for {
		var req request
		if err := dec.Decode(&req); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
		var res response
		switch req.Command {
		case "get":
			res = c.get(req.ActionID)
		case "put":
			var body []byte
			if req.BodySize > 0 {
				// The body follows as a JSON string of base64.
				var encoded string
				if err := dec.Decode(&encoded); err != nil {
					return fmt.Errorf("put %x: body: %w", req.ActionID, err)
				}
				var err error
				if body, err = base64.StdEncoding.DecodeString(encoded); err != nil {
					return fmt.Errorf("put %x: body: %w", req.ActionID, err)
				}
			}
			res = c.put(req.ActionID, req.OutputID, body)
		case "close":
			res = response{}
			res.ID = req.ID
			fmt.Fprintf(os.Stderr, "gocacheprog: %d hits from %s\n", c.hits, c.url)
			return reply(res)
		default:
			res = response{Err: "unknown command " + req.Command}
		}
		res.ID = req.ID
		if err := reply(res); err != nil {
			return err
		}
	}
}

func (c *cache) get(action []byte) response {
	key := hex.EncodeToString(action)
	if e, ok := c.local[key]; ok {
		return response{OutputID: e.output, Size: e.size, DiskPath: e.path}
	}
	resp, err := c.client.Get(c.url + "/" + key)
	if err != nil {
		return response{Miss: true}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, resp.Body)
		return response{Miss: true}
	}
	output, err := hex.DecodeString(resp.Header.Get("Go-Output-Id"))
	if err != nil || len(output) != sha256.Size {
		return response{Miss: true}
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return response{Miss: true}
	}
	e, err := c.store(key, output, body)
	if err != nil {
		return response{Miss: true}
	}
	c.hits++
	return response{OutputID: e.output, Size: e.size, DiskPath: e.path}
}

func (c *cache) put(action, output, body []byte) response {
	e, err := c.store(hex.EncodeToString(action), output, body)
	if err != nil {
		return response{Err: err.Error()}
	}
	return response{DiskPath: e.path}
}

// store writes an output to the directory and remembers it for the action.
func (c *cache) store(key string, output, body []byte) (entry, error) {
	path := filepath.Join(c.dir, hex.EncodeToString(output)+"-d")
	if _, err := os.Stat(path); err != nil {
		tmp, err := os.CreateTemp(c.dir, "tmp-")
		if err != nil {
			return entry{}, err
		}
		if _, err := tmp.Write(body); err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
			return entry{}, err
		}
		if err := tmp.Close(); err != nil {
			os.Remove(tmp.Name())
			return entry{}, err
		}
		if err := os.Rename(tmp.Name(), path); err != nil {
			os.Remove(tmp.Name())
			return entry{}, err
		}
	}
	e := entry{output: output, size: int64(len(body)), path: path}
	c.local[key] = e
	return e, nil
}
