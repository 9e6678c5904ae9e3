package kmip

import "crypto/x509"

func x509Pool(pem []byte) *x509.CertPool {
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(pem) {
		return nil
	}
	return p
}
