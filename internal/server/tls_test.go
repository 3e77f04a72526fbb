package server_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/internal/server"
	"github.com/amnesia-dev/amnesia/internal/service"
	"github.com/amnesia-dev/amnesia/internal/state"
)

// TestServeTLSAndGracefulStop: with a certificate the server speaks TLS only,
// and ending its context stops it.
func TestServeTLSAndGracefulStop(t *testing.T) {
	dir := t.TempDir()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)

	sd, err := state.Init(filepath.Join(dir, "state"), nil)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := service.Open(context.Background(), sd.Path, service.Options{NoWorker: true})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	srv, err := server.New(server.Options{Service: svc})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln, certFile, keyFile, 5*time.Second) }()
	pool := x509.NewCertPool()
	pool.AddCert(mustParse(t, der))
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	r, err := c.Get("https://" + ln.Addr().String() + "/healthz")
	if err != nil || r.StatusCode != 200 {
		t.Fatalf("healthz over TLS: %v %v", r, err)
	}
	r.Body.Close()
	if r, err := http.Get("http://" + ln.Addr().String() + "/healthz"); err == nil && r.StatusCode == 200 {
		t.Fatal("plain HTTP answered on a TLS listener")
	}
	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve after stop: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not stop")
	}
}

func mustParse(t *testing.T, der []byte) *x509.Certificate {
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
