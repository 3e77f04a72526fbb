package timestamp

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/asn1"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"strings"
	"time"
	"unicode"

	dtimestamp "github.com/digitorus/timestamp"
)

// DefaultTimeout bounds a whole Request exchange when
// RequestOptions.Timeout is zero.
const DefaultTimeout = 10 * time.Second

// maxResponse bounds the TSA's reply that Request reads.
const maxResponse = 1 << 20

// RequestOptions adjusts Request. The zero value (or nil) is fine.
type RequestOptions struct {
	// Timeout bounds the whole exchange: connecting, sending and reading
	// the reply. Zero means DefaultTimeout. The context passed to Request
	// can end it sooner.
	Timeout time.Duration
	// Client sends the request; nil means a plain http.Client. Its own
	// Timeout, if any, also applies.
	Client *http.Client
	// Policy, if set, is sent as reqPolicy, and the token must carry it.
	Policy asn1.ObjectIdentifier
	// Roots, if set, makes Request also run Verify on the token (with
	// Intermediates), so that a token that would not verify later is
	// refused now.
	Roots, Intermediates *x509.CertPool
}

// Token is a time-stamp token obtained by Request.
type Token struct {
	// DER is the TimeStampToken (a CMS ContentInfo with SignedData), not
	// the whole TimeStampResp. Store it; Verify takes it.
	DER []byte
	// Info is what the token says. Chain is set only if
	// RequestOptions.Roots was.
	Info
}

// Request asks the TSA at tsaURL for a time-stamp token over message: it
// sends a TimeStampReq with the SHA-256 imprint of message, a random 64-bit
// nonce and certReq set, as an HTTP POST of application/timestamp-query, and
// checks that the reply is granted, that its token carries the imprint and
// nonce sent (and the policy, if one was requested), and that the token's
// structure and signature are sound (ParseToken). See RequestOptions for the
// time limit (10 s by default) and for verifying the chain at once.
//
// Errors wrap ErrUnreachable (no connection or no reply in time),
// ErrHTTPStatus, ErrMalformed (the reply is not a TimeStampResp or its token
// is malformed), ErrRejected (with the PKIStatus and failure info),
// ErrImprint, ErrNonce, ErrPolicy, or the errors of ParseToken and Verify.
func Request(ctx context.Context, tsaURL string, message []byte, opts *RequestOptions) (*Token, error) {
	if opts == nil {
		opts = &RequestOptions{}
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	client := opts.Client
	if client == nil {
		client = &http.Client{}
	}

	digest := sha256.Sum256(message)
	nonce, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 64))
	if err != nil {
		return nil, fmt.Errorf("timestamp: nonce: %w", err)
	}
	reqDER, err := (&dtimestamp.Request{
		HashAlgorithm: crypto.SHA256,
		HashedMessage: digest[:],
		Certificates:  true,
		TSAPolicyOID:  opts.Policy,
		Nonce:         nonce,
	}).Marshal()
	if err != nil {
		return nil, fmt.Errorf("timestamp: encoding request: %w", err)
	}

	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	httpReq, err := http.NewRequestWithContext(ctx, http.MethodPost, tsaURL, bytes.NewReader(reqDER))
	if err != nil {
		return nil, fmt.Errorf("timestamp: TSA URL %q: %w", tsaURL, err)
	}
	httpReq.Header.Set("Content-Type", "application/timestamp-query")
	httpReq.Header.Set("Accept", "application/timestamp-reply")

	resp, err := client.Do(httpReq)
	if err != nil {
		return nil, unreachable(ctx, tsaURL, timeout, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
	if err != nil {
		return nil, unreachable(ctx, tsaURL, timeout, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, errorf(ErrHTTPStatus, "TSA %s answered %s%s", tsaURL, resp.Status, snippet(body))
	}
	if len(body) > maxResponse {
		return nil, errorf(ErrMalformed, "TSA %s sent more than %d bytes", tsaURL, maxResponse)
	}

	tokenDER, err := parseResponse(body)
	if err != nil {
		return nil, fmt.Errorf("%w (TSA %s)", err, tsaURL)
	}
	info, err := ParseToken(tokenDER)
	if err != nil {
		return nil, fmt.Errorf("%w (token from TSA %s)", err, tsaURL)
	}
	if info.HashAlgorithm != crypto.SHA256 || !bytes.Equal(info.HashedMessage, digest[:]) {
		return nil, errorf(ErrImprint, "TSA %s time-stamped %v %x, not the SHA-256 %x that was sent", tsaURL, info.HashAlgorithm, info.HashedMessage, digest)
	}
	if info.Nonce == nil {
		return nil, errorf(ErrNonce, "TSA %s omitted the nonce", tsaURL)
	}
	if info.Nonce.Cmp(nonce) != 0 {
		return nil, errorf(ErrNonce, "TSA %s returned nonce %x, sent %x", tsaURL, info.Nonce, nonce)
	}
	if opts.Policy != nil && !info.Policy.Equal(opts.Policy) {
		return nil, errorf(ErrPolicy, "TSA %s issued the token under policy %v, requested %v", tsaURL, info.Policy, opts.Policy)
	}
	if opts.Roots != nil {
		// Verify's remaining checks, on the token ParseToken has checked.
		if err := verifyParsed(info, message, opts.Roots, opts.Intermediates); err != nil {
			return nil, fmt.Errorf("%w (token from TSA %s)", err, tsaURL)
		}
	}
	return &Token{DER: tokenDER, Info: *info}, nil
}

// unreachable describes a transport failure.
func unreachable(ctx context.Context, url string, timeout time.Duration, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return errorf(ErrUnreachable, "TSA %s did not answer within %s", url, timeout)
	}
	return errorf(ErrUnreachable, "TSA %s: %v", url, err)
}

// snippet quotes the start of an error body, printable characters only.
func snippet(body []byte) string {
	s := strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return ' '
	}, string(body[:min(len(body), 200)]))
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	return fmt.Sprintf(": %q", s)
}

// TimeStampResp (RFC 3161 2.4.2).
type tspResponse struct {
	Status pkiStatusInfo
	Token  asn1.RawValue `asn1:"optional"`
}

type pkiStatusInfo struct {
	Status       int
	StatusString []string       `asn1:"optional,utf8"`
	FailInfo     asn1.BitString `asn1:"optional"`
}

// failInfoBits are the PKIFailureInfo bits RFC 3161 defines.
var failInfoBits = []dtimestamp.FailureInfo{
	dtimestamp.BadAlgorithm, dtimestamp.BadRequest, dtimestamp.BadDataFormat,
	dtimestamp.TimeNotAvailable, dtimestamp.UnacceptedPolicy,
	dtimestamp.UnacceptedExtension, dtimestamp.AddInfoNotAvailable,
	dtimestamp.SystemFailure,
}

var failInfoNames = map[dtimestamp.FailureInfo]string{
	dtimestamp.BadAlgorithm: "badAlg", dtimestamp.BadRequest: "badRequest",
	dtimestamp.BadDataFormat: "badDataFormat", dtimestamp.TimeNotAvailable: "timeNotAvailable",
	dtimestamp.UnacceptedPolicy: "unacceptedPolicy", dtimestamp.UnacceptedExtension: "unacceptedExtension",
	dtimestamp.AddInfoNotAvailable: "addInfoNotAvailable", dtimestamp.SystemFailure: "systemFailure",
}

// parseResponse decodes a TimeStampResp and returns its token, or an error
// naming the PKIStatus, status text and failure info.
func parseResponse(body []byte) ([]byte, error) {
	var r tspResponse
	rest, err := asn1.Unmarshal(body, &r)
	if err != nil {
		return nil, errorf(ErrMalformed, "reply is not a DER TimeStampResp (%d bytes%s)", len(body), snippet(body))
	}
	if len(rest) != 0 {
		return nil, errorf(ErrMalformed, "reply has %d bytes after the TimeStampResp", len(rest))
	}
	st := r.Status
	if st.Status != int(dtimestamp.Granted) && st.Status != int(dtimestamp.GrantedWithMods) {
		var fails []string
		for _, f := range failInfoBits {
			if st.FailInfo.At(int(f)) == 1 {
				fails = append(fails, fmt.Sprintf("%s (%s)", failInfoNames[f], f))
			}
		}
		msg := fmt.Sprintf("PKIStatus %d (%s)", st.Status, dtimestamp.Status(st.Status))
		if len(st.StatusString) > 0 {
			msg += fmt.Sprintf(", status text %q", strings.Join(st.StatusString, "; "))
		}
		if len(fails) > 0 {
			msg += ", failInfo " + strings.Join(fails, ", ")
		}
		return nil, errorf(ErrRejected, "%s", msg)
	}
	if len(r.Token.FullBytes) == 0 {
		return nil, errorf(ErrMalformed, "reply is granted but holds no TimeStampToken")
	}
	return r.Token.FullBytes, nil
}
