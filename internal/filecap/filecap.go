// Package filecap writes Linux file capabilities: what
// `setcap cap_net_bind_service=+ep FILE` of libcap does, for the image
// builds (internal/ociimage, the Dockerfile) that must not need libcap's
// tools.
package filecap

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"
)

// Xattr is the extended attribute that holds a file's
// capabilities.
const Xattr = "security.capability"

// NetBindService is the capability to bind ports below 1024
// (CAP_NET_BIND_SERVICE in linux/capability.h).
const NetBindService = 10

// Value returns the value of Xattr that grants the
// capabilities caps as permitted and effective when the file is executed:
// what `setcap cap_net_bind_service=+ep FILE` writes for
// Value(NetBindService). The layout is struct vfs_cap_data of
// linux/capability.h, revision 2: a little-endian magic word with the
// effective flag, then the permitted and inheritable sets of capabilities
// 0-31 and 32-63.
func Value(caps ...uint) []byte {
	const (
		vfsCapRevision2     = 0x02000000
		vfsCapFlagEffective = 0x000001
	)
	var permitted [2]uint32
	for _, c := range caps {
		permitted[c/32] |= 1 << (c % 32)
	}
	b := make([]byte, 20)
	binary.LittleEndian.PutUint32(b[0:], vfsCapRevision2|vfsCapFlagEffective)
	binary.LittleEndian.PutUint32(b[4:], permitted[0])  // permitted, 0-31
	binary.LittleEndian.PutUint32(b[8:], 0)             // inheritable, 0-31
	binary.LittleEndian.PutUint32(b[12:], permitted[1]) // permitted, 32-63
	binary.LittleEndian.PutUint32(b[16:], 0)            // inheritable, 32-63
	return b
}

// Set gives the file at path the capabilities caps, as
// setcap CAP=+ep does. It needs CAP_SETFCAP (root).
func Set(path string, caps ...uint) error {
	if err := unix.Setxattr(path, Xattr, Value(caps...), 0); err != nil {
		return fmt.Errorf("set file capabilities of %s: %w", path, err)
	}
	return nil
}
