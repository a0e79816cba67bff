package ociimage

import (
	"fmt"
	"os"
)

// NonRoot is the user and group id of the "nonroot" user of distroless
// images, which the image runs as.
const NonRoot = 65532

// Base locates what the base layer copies from this machine.
type Base struct {
	// CABundle is the PEM bundle of trusted CAs; empty means
	// DefaultCABundle (Debian's ca-certificates).
	CABundle string
	// Zoneinfo is the time zone database; empty means DefaultZoneinfo
	// (Debian's tzdata).
	Zoneinfo string
}

const (
	DefaultCABundle = "/etc/ssl/certs/ca-certificates.crt"
	DefaultZoneinfo = "/usr/share/zoneinfo"
)

// The users and groups of a distroless static image: root, nobody and
// nonroot, plus the tty and staff groups.
const (
	passwd = "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
		"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group = "root:x:0:\n" +
		"nobody:x:65534:\n" +
		"tty:x:5:\n" +
		"staff:x:50:\n" +
		"nonroot:x:65532:\n"
	// Go's resolver and glibc both read the hosts line.
	nsswitch = "hosts: files dns\n"
)

// BaseEnv is the environment of an image on the base layer: a PATH, and the
// CA bundle for programs that do not look in the usual places.
var BaseEnv = []string{
	"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	"SSL_CERT_FILE=" + DefaultCABundle,
}

// Files returns the base layer's files: what a static program expects of a
// distroless nonroot image. That is /etc/passwd and /etc/group with root,
// nobody and nonroot (65532), /etc/nsswitch.conf, the CA bundle at
// DefaultCABundle, the time zone database at DefaultZoneinfo, /tmp (1777)
// and the home directory /home/nonroot owned by nonroot.
func (b Base) Files() ([]File, error) {
	ca, zoneinfo := b.CABundle, b.Zoneinfo
	if ca == "" {
		ca = DefaultCABundle
	}
	if zoneinfo == "" {
		zoneinfo = DefaultZoneinfo
	}
	if _, err := os.Stat(ca); err != nil {
		return nil, fmt.Errorf("base layer: CA bundle (Debian package ca-certificates): %w", err)
	}
	zones, err := Tree(zoneinfo, DefaultZoneinfo)
	if err != nil {
		return nil, fmt.Errorf("base layer: time zone database (Debian package tzdata): %w", err)
	}
	files := []File{
		Regular("/etc/passwd", 0o644, []byte(passwd)),
		Regular("/etc/group", 0o644, []byte(group)),
		Regular("/etc/nsswitch.conf", 0o644, []byte(nsswitch)),
		Copy(DefaultCABundle, 0o644, ca),
		Dir("/tmp", 0o777|os.ModeSticky, 0, 0),
		Dir("/home/nonroot", 0o700, NonRoot, NonRoot),
	}
	return append(files, zones...), nil
}
