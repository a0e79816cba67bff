package controlplane

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// clusterName names the single cluster entry of every kubeconfig written here.
const clusterName = "coredns-mcs"

// kubeconfigContext is one context of a kubeconfig file to write.
type kubeconfigContext struct {
	name      string
	user      string
	namespace string
	auth      *clientcmdapi.AuthInfo
}

// writeKubeconfig writes a kubeconfig for this control plane whose current
// context is the first one given. Credentials are embedded rather than
// referenced, so the file stays valid when copied.
func (c *ControlPlane) writeKubeconfig(path string, contexts ...kubeconfigContext) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[clusterName] = &clientcmdapi.Cluster{
		Server:                   c.Host,
		CertificateAuthorityData: c.ca.certPEM,
	}
	for _, kc := range contexts {
		cfg.AuthInfos[kc.user] = kc.auth
		cfg.Contexts[kc.name] = &clientcmdapi.Context{
			Cluster:   clusterName,
			AuthInfo:  kc.user,
			Namespace: kc.namespace,
		}
	}
	cfg.CurrentContext = contexts[0].name
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return nil
}

func certAuth(kp *keyPair) *clientcmdapi.AuthInfo {
	return &clientcmdapi.AuthInfo{ClientCertificateData: kp.certPEM, ClientKeyData: kp.keyPEM}
}

// writeAdminKubeconfig writes Kubeconfig with AdminContext and OtherContext.
func (c *ControlPlane) writeAdminKubeconfig() error {
	other, err := c.ca.clientCert(OtherUser, nil)
	if err != nil {
		return err
	}
	c.Kubeconfig = filepath.Join(c.Dir, "admin.kubeconfig")
	return c.writeKubeconfig(c.Kubeconfig,
		kubeconfigContext{name: AdminContext, user: adminUser, namespace: metav1.NamespaceDefault, auth: certAuth(c.admin)},
		kubeconfigContext{name: OtherContext, user: OtherUser, namespace: OtherNamespace, auth: certAuth(other)},
	)
}

// nextCredentialPath returns a new, unique file path in Dir.
func (c *ControlPlane) nextCredentialPath(suffix string) string {
	c.mu.Lock()
	c.credentials++
	n := c.credentials
	c.mu.Unlock()
	return filepath.Join(c.Dir, "credentials-"+strconv.Itoa(n)+suffix)
}

// KubeconfigFor returns the path of a new kubeconfig file that authenticates
// as user in groups (plus "system:authenticated", which every authenticated
// user has) with a client certificate signed by the control plane's CA. Its
// only context, named after the user, is current and has namespace
// "default". The identity can do only what RBAC objects grant it, e.g.
//
//	path, err := cp.KubeconfigFor("restricted", "mcs-readers")
//	// then bind a ClusterRole to User "restricted" or Group "mcs-readers".
func (c *ControlPlane) KubeconfigFor(user string, groups ...string) (string, error) {
	kp, err := c.ca.clientCert(user, groups)
	if err != nil {
		return "", err
	}
	path := c.nextCredentialPath(".kubeconfig")
	err = c.writeKubeconfig(path, kubeconfigContext{
		name: user, user: user, namespace: metav1.NamespaceDefault, auth: certAuth(kp),
	})
	if err != nil {
		return "", err
	}
	return path, nil
}

// ClientCertFor writes a client certificate and key that authenticate as user
// in groups, for clients configured with separate certificate files instead
// of a kubeconfig. The server's CA certificate is CAFile.
func (c *ControlPlane) ClientCertFor(user string, groups ...string) (certFile, keyFile string, err error) {
	kp, err := c.ca.clientCert(user, groups)
	if err != nil {
		return "", "", err
	}
	base := c.nextCredentialPath("")
	certFile, keyFile = base+".crt", base+".key"
	if err := kp.write(certFile, keyFile, "client"); err != nil {
		return "", "", err
	}
	return certFile, keyFile, nil
}

// KubeconfigForServiceAccount creates the ServiceAccount namespace/name if it
// does not exist yet, issues a one-hour token for it through the
// TokenRequest API and returns the path of a kubeconfig that uses the token.
// The identity is "system:serviceaccount:NAMESPACE:NAME"; it can do only what
// RBAC objects grant it. The namespace must exist.
func (c *ControlPlane) KubeconfigForServiceAccount(ctx context.Context, namespace, name string) (string, error) {
	client, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return "", fmt.Errorf("create client: %w", err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	_, err = client.CoreV1().ServiceAccounts(namespace).Create(ctx, sa, metav1.CreateOptions{})
	if err := ignoreAlreadyExists(err); err != nil {
		return "", fmt.Errorf("create ServiceAccount %s/%s: %w", namespace, name, err)
	}
	expiry := int64(3600)
	tr, err := client.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("request token for ServiceAccount %s/%s: %w", namespace, name, err)
	}
	user := "system:serviceaccount:" + namespace + ":" + name
	path := c.nextCredentialPath(".kubeconfig")
	err = c.writeKubeconfig(path, kubeconfigContext{
		name: user, user: user, namespace: namespace, auth: &clientcmdapi.AuthInfo{Token: tr.Status.Token},
	})
	if err != nil {
		return "", err
	}
	return path, nil
}
