package controlplane

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"net"
	"os"
	"path/filepath"
)

// FrontProxyClient is the name in the client certificate that kube-apiserver
// presents to extension API servers when Options.Aggregation is set; they
// accept the X-Remote-* headers only from it.
const FrontProxyClient = "front-proxy-client"

// writeFrontProxyCert writes the client certificate kube-apiserver proxies
// to extension API servers with.
func (c *ControlPlane) writeFrontProxyCert() error {
	kp, err := c.ca.clientCert(FrontProxyClient, nil)
	if err != nil {
		return err
	}
	return kp.write(filepath.Join(c.Dir, "front-proxy-client.crt"), filepath.Join(c.Dir, "front-proxy-client.key"), "front-proxy client")
}

// write writes the certificate and the key to files only the owner can read;
// what names them in errors.
func (kp *keyPair) write(certFile, keyFile, what string) error {
	if err := os.WriteFile(certFile, kp.certPEM, 0o600); err != nil {
		return fmt.Errorf("write %s certificate: %w", what, err)
	}
	if err := os.WriteFile(keyFile, kp.keyPEM, 0o600); err != nil {
		return fmt.Errorf("write %s key: %w", what, err)
	}
	return nil
}

// aggregationArgs are kube-apiserver's flags of the aggregation layer. The
// control plane's CA doubles as the request-header CA; the allowed name keeps
// other certificates of that CA from asserting users in headers. kube-apiserver
// publishes these settings in kube-system/extension-apiserver-authentication,
// where extension API servers read them.
func aggregationArgs(dir, caFile string) []string {
	return []string{
		"--proxy-client-cert-file=" + filepath.Join(dir, "front-proxy-client.crt"),
		"--proxy-client-key-file=" + filepath.Join(dir, "front-proxy-client.key"),
		"--requestheader-client-ca-file=" + caFile,
		"--requestheader-allowed-names=" + FrontProxyClient,
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
	}
}

// ServingCertFor writes a TLS serving certificate and key for a server on
// 127.0.0.1 that clients also reach by the given DNS names, signed by the
// control plane's CA (CAFile). It is for servers that kube-apiserver calls:
// extension API servers behind an APIService, and admission webhooks, whose
// caBundle is then the content of CAFile. kube-apiserver checks an
// APIService's certificate against the name SERVICE.NAMESPACE.svc.
func (c *ControlPlane) ServingCertFor(dnsNames ...string) (certFile, keyFile string, err error) {
	kp, err := c.ca.issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "127.0.0.1"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    append([]string{"localhost"}, dnsNames...),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	})
	if err != nil {
		return "", "", err
	}
	base := c.nextCredentialPath("")
	certFile, keyFile = base+"-serving.crt", base+"-serving.key"
	if err := kp.write(certFile, keyFile, "serving"); err != nil {
		return "", "", err
	}
	return certFile, keyFile, nil
}

// EtcdURL is the client URL of the control plane's etcd, for servers that
// keep their own objects in the same etcd, as Karmada's aggregated apiserver
// does.
func (c *ControlPlane) EtcdURL() string {
	return c.etcdURL
}
