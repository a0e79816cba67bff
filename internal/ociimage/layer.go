// Package ociimage builds container images without a container engine or a
// registry: layers from files (with owners, modes and file capabilities), a
// distroless-style nonroot base, the image config, and archives that
// `ctr images import`, `docker load` and `skopeo copy oci-archive:` read.
//
// The image objects are go-containerregistry's (pkg/v1), so manifests,
// configs and digests come from that library rather than from JSON written
// here. Every timestamp is fixed, so the same inputs give the same digests.
package ociimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Epoch is the modification time of every file in a layer, and the default
// creation time of an image: fixed, so that builds are reproducible.
var Epoch = time.Unix(0, 0).UTC()

// File is one entry of a layer.
type File struct {
	// Path is where the entry is in the image, absolute: "/etc/passwd".
	Path string
	// Mode is the permission bits (including setuid, setgid and sticky)
	// and the type: fs.ModeDir, fs.ModeSymlink, or none for a regular file.
	Mode     fs.FileMode
	UID, GID int
	// Data is the content of a regular file; when it is nil, the content
	// is read from Source on this machine.
	Data   []byte
	Source string
	// Linkname is the target of a symbolic link.
	Linkname string
	// Xattrs are extended attributes, such as "security.capability".
	Xattrs map[string][]byte
}

// Regular returns a regular file owned by root with content data.
func Regular(p string, mode fs.FileMode, data []byte) File {
	return File{Path: p, Mode: mode.Perm(), Data: data}
}

// Copy returns a regular file owned by root whose content is read from the
// file source on this machine when the layer is built.
func Copy(p string, mode fs.FileMode, source string) File {
	return File{Path: p, Mode: mode.Perm(), Source: source}
}

// Dir returns a directory.
func Dir(p string, mode fs.FileMode, uid, gid int) File {
	return File{Path: p, Mode: fs.ModeDir | mode&(fs.ModePerm|fs.ModeSticky|fs.ModeSetuid|fs.ModeSetgid), UID: uid, GID: gid}
}

// Symlink returns a symbolic link at p that points to target.
func Symlink(p, target string) File {
	return File{Path: p, Mode: fs.ModeSymlink | 0o777, Linkname: target}
}

// Tree returns the files under the directory root on this machine, placed
// under dir in the image and owned by root, with their permission bits.
// Regular files, directories and symbolic links are kept; anything else
// (sockets, devices) is an error.
func Tree(root, dir string) ([]File, error) {
	var files []File
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		dest := path.Join(dir, filepath.ToSlash(rel))
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			files = append(files, Dir(dest, info.Mode(), 0, 0))
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			files = append(files, Symlink(dest, target))
		case d.Type().IsRegular():
			files = append(files, Copy(dest, info.Mode(), p))
		default:
			return fmt.Errorf("%s: unsupported file type %s", p, d.Type())
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read tree %s: %w", root, err)
	}
	return files, nil
}

// LayerOptions tune Layer.
type LayerOptions struct {
	// Level is the gzip compression level; zero means gzip.DefaultCompression.
	// Test images that are built and loaded at once use gzip.BestSpeed.
	Level int
}

// Layer builds a gzip-compressed OCI layer from files. Entries are sorted by
// path and missing parent directories are added (0755, root), so the order
// of files does not matter and the layer is the same for the same files.
// Two entries with one path are an error.
func Layer(files []File, opts LayerOptions) (v1.Layer, error) {
	entries, err := normalize(files)
	if err != nil {
		return nil, err
	}
	level := opts.Level
	if level == 0 {
		level = gzip.DefaultCompression
	}
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, level)
	if err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	tw := tar.NewWriter(zw)
	for _, f := range entries {
		if err := writeEntry(tw, f); err != nil {
			return nil, fmt.Errorf("layer entry %s: %w", f.Path, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	compressed := buf.Bytes()
	// The opener hands out gzip data, which the library detects and keeps
	// as the layer's blob; it decompresses only to compute the diff ID.
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(compressed)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	return layer, nil
}

// normalize checks and cleans paths, adds missing parent directories and
// sorts the entries so that every directory precedes its contents.
func normalize(files []File) ([]File, error) {
	byPath := make(map[string]File, len(files))
	for _, f := range files {
		if !path.IsAbs(f.Path) {
			return nil, fmt.Errorf("layer entry %q: path must be absolute", f.Path)
		}
		f.Path = path.Clean(f.Path)
		if f.Path == "/" {
			continue // the root of the image exists already
		}
		if _, dup := byPath[f.Path]; dup {
			return nil, fmt.Errorf("layer entry %s: given twice", f.Path)
		}
		byPath[f.Path] = f
	}
	for p := range byPath {
		for dir := path.Dir(p); dir != "/"; dir = path.Dir(dir) {
			if _, ok := byPath[dir]; !ok {
				byPath[dir] = Dir(dir, 0o755, 0, 0)
			}
		}
	}
	entries := make([]File, 0, len(byPath))
	for _, f := range byPath {
		entries = append(entries, f)
	}
	// Sorting by path components (not by the strings) puts "/a/b" before
	// "/a-b", so a directory's contents follow it directly.
	slices.SortFunc(entries, func(a, b File) int {
		return slices.Compare(strings.Split(a.Path, "/"), strings.Split(b.Path, "/"))
	})
	return entries, nil
}

func writeEntry(tw *tar.Writer, f File) error {
	hdr := &tar.Header{
		Name:    strings.TrimPrefix(f.Path, "/"),
		Mode:    int64(f.Mode.Perm()),
		Uid:     f.UID,
		Gid:     f.GID,
		ModTime: Epoch,
		Format:  tar.FormatPAX,
	}
	if f.Mode&fs.ModeSetuid != 0 {
		hdr.Mode |= 0o4000
	}
	if f.Mode&fs.ModeSetgid != 0 {
		hdr.Mode |= 0o2000
	}
	if f.Mode&fs.ModeSticky != 0 {
		hdr.Mode |= 0o1000
	}
	if len(f.Xattrs) > 0 {
		// The PAX form of extended attributes that containerd, Docker and
		// GNU tar read back.
		hdr.PAXRecords = make(map[string]string, len(f.Xattrs))
		for name, value := range f.Xattrs {
			hdr.PAXRecords["SCHILY.xattr."+name] = string(value)
		}
	}
	var content io.Reader
	switch {
	case f.Mode.IsDir():
		hdr.Typeflag = tar.TypeDir
		hdr.Name += "/"
	case f.Mode&fs.ModeSymlink != 0:
		hdr.Typeflag = tar.TypeSymlink
		hdr.Linkname = f.Linkname
		hdr.Mode = 0o777
	case f.Mode.IsRegular():
		hdr.Typeflag = tar.TypeReg
		data := f.Data
		if data == nil {
			if f.Source == "" {
				return errors.New("a regular file needs Data or Source")
			}
			var err error
			if data, err = os.ReadFile(f.Source); err != nil {
				return err
			}
		}
		hdr.Size = int64(len(data))
		content = bytes.NewReader(data)
	default:
		return fmt.Errorf("unsupported file type %s", f.Mode.Type())
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if content != nil {
		if _, err := io.Copy(tw, content); err != nil {
			return err
		}
	}
	return nil
}

// Programs returns the files of dynamically linked programs on this
// machine, at the same paths in the image: each program and the shared
// libraries and dynamic loader ldd lists for it. Symbolic links are
// resolved, so the image holds regular files.
func Programs(paths ...string) ([]File, error) {
	seen := map[string]bool{}
	var files []File
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			files = append(files, Copy(p, 0o755, p))
		}
	}
	for _, p := range paths {
		add(p)
		out, err := exec.Command("ldd", p).Output()
		if err != nil {
			if strings.Contains(string(out), "not a dynamic executable") {
				continue // static
			}
			return nil, fmt.Errorf("ldd %s: %w", p, err)
		}
		for _, line := range strings.Split(string(out), "\n") {
			// "libfoo.so.1 => /lib/x86_64-linux-gnu/libfoo.so.1 (0x...)",
			// "/lib64/ld-linux-x86-64.so.2 (0x...)"; linux-vdso has no file.
			fields := strings.Fields(line)
			switch {
			case len(fields) >= 3 && fields[1] == "=>" && fields[2] == "not":
				return nil, fmt.Errorf("ldd %s: %s", p, strings.TrimSpace(line))
			case len(fields) >= 3 && fields[1] == "=>" && strings.HasPrefix(fields[2], "/"):
				add(fields[2])
			case len(fields) >= 1 && strings.HasPrefix(fields[0], "/"):
				add(fields[0])
			}
		}
	}
	return files, nil
}
