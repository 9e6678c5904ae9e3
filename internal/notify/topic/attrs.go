package topic

import (
	"sort"
	"strconv"
	"strings"
)

// Attribute names accepted by CreateTopic and SetTopicAttributes (RGW's).
const (
	AttrPushEndpoint       = "push-endpoint"
	AttrPersistent         = "persistent"
	AttrOpaqueData         = "OpaqueData"
	AttrVerifySSL          = "verify-ssl"
	AttrCloudEvents        = "cloudevents"
	AttrTimeToLive         = "time_to_live"
	AttrMaxRetries         = "max_retries"
	AttrRetrySleepDuration = "retry_sleep_duration"
	AttrPolicy             = "Policy"
	AttrAMQPExchange       = "amqp-exchange"
	AttrAMQPAckLevel       = "amqp-ack-level"
	AttrKafkaAckLevel      = "kafka-ack-level"
	AttrUseSSL             = "use-ssl"
	AttrCALocation         = "ca-location"
	AttrMechanism          = "mechanism"
	AttrUserName           = "user-name"
	AttrPassword           = "password"
)

var knownAttrs = map[string]bool{
	AttrPushEndpoint: true, AttrPersistent: true, AttrOpaqueData: true, AttrVerifySSL: true,
	AttrCloudEvents: true, AttrTimeToLive: true, AttrMaxRetries: true, AttrRetrySleepDuration: true,
	AttrPolicy: true, AttrAMQPExchange: true, AttrAMQPAckLevel: true, AttrKafkaAckLevel: true,
	AttrUseSSL: true, AttrCALocation: true, AttrMechanism: true, AttrUserName: true, AttrPassword: true,
}

// Ack levels.
const (
	AckNone     = "none"     // delivered once handed to the client library
	AckBroker   = "broker"   // delivered when the broker confirms (default)
	AckRoutable = "routable" // AMQP: the broker confirms and could route it
)

// SASL mechanisms for Kafka.
const (
	MechanismPlain       = "PLAIN"
	MechanismScramSHA256 = "SCRAM-SHA-256"
	MechanismScramSHA512 = "SCRAM-SHA-512"
)

// UseGlobal in TimeToLive, MaxRetries and RetrySleepDuration means "use the
// gateway-wide topic-persistency-* option".
const UseGlobal = -1

// Settings are a topic's validated attributes. The JSON form is part of the
// stored Topic: field names are fixed.
type Settings struct {
	PushEndpoint string `json:"push_endpoint"` // as given; may carry credentials
	Persistent   bool   `json:"persistent"`
	OpaqueData   string `json:"opaque_data"`
	VerifySSL    bool   `json:"verify_ssl"`
	CloudEvents  bool   `json:"cloudevents"`
	// Seconds; UseGlobal when unset.
	TimeToLive int `json:"time_to_live"`
	// Attempts; UseGlobal when unset.
	MaxRetries int `json:"max_retries"`
	// Seconds between attempts; UseGlobal when unset.
	RetrySleepDuration int    `json:"retry_sleep_duration"`
	Policy             string `json:"policy"`
	AMQPExchange       string `json:"amqp_exchange"`
	AMQPAckLevel       string `json:"amqp_ack_level"`
	KafkaAckLevel      string `json:"kafka_ack_level"`
	UseSSL             bool   `json:"use_ssl"`
	CALocation         string `json:"ca_location"`
	Mechanism          string `json:"mechanism"`
	// UserName and Password given as attributes rather than in the URL.
	UserName string `json:"user_name"`
	Password string `json:"password"`
}

// Endpoint parses PushEndpoint; nil when the topic has none.
func (s *Settings) Endpoint() (*EndpointURL, error) {
	if s.PushEndpoint == "" {
		return nil, nil
	}
	return ParseEndpoint(s.PushEndpoint)
}

// Credentials returns the user and password for the broker: the
// attributes when set, else the URL's.
func (s *Settings) Credentials() (user, password string) {
	if s.UserName != "" {
		return s.UserName, s.Password
	}
	if u, err := s.Endpoint(); err == nil && u != nil {
		return u.User, u.Password
	}
	return "", ""
}

// HasSecret reports whether the topic stores a password (RGW's
// HasStoredSecret): such topics may only be shown over TLS.
func (s *Settings) HasSecret() bool {
	_, pw := s.Credentials()
	return pw != ""
}

// Options control validation.
type Options struct {
	// RequestTLS is true when the API request arrived over TLS.
	RequestTLS bool
	// AllowCleartextSecrets accepts credentials in requests without TLS
	// and Kafka credentials without use-ssl (RGW's
	// rgw_allow_notification_secrets_in_cleartext). Off by default.
	AllowCleartextSecrets bool
}

// Parse validates a CreateTopic attribute set. Attributes Cairn does not
// know are ignored and returned, so the handler can log them: AWS clients
// send SNS attributes (DisplayName, ...) that mean nothing here.
func Parse(attrs map[string]string, opts Options) (Settings, []string, error) {
	var ignored []string
	known := map[string]string{}
	for k, v := range attrs {
		if knownAttrs[k] {
			known[k] = v
		} else {
			ignored = append(ignored, k)
		}
	}
	sort.Strings(ignored)
	s, err := parseKnown(known, opts)
	return s, ignored, err
}

// Set applies one SetTopicAttributes change to cur. Unknown names are an
// error, and the result is validated as a whole (so setting push-endpoint
// to an amqp URL on a topic without amqp-exchange fails).
func Set(cur Settings, name, value string, opts Options) (Settings, error) {
	if !knownAttrs[name] {
		return Settings{}, invalid("unknown topic attribute %q", name)
	}
	attrs := cur.Attributes(true)
	if value == "" {
		delete(attrs, name)
	} else {
		attrs[name] = value
	}
	// Secrets already stored were accepted before; only a new one must
	// arrive over TLS.
	newSecret := false
	if value != "" {
		switch name {
		case AttrPassword:
			newSecret = true
		case AttrPushEndpoint:
			u, err := ParseEndpoint(value)
			newSecret = err == nil && u.Password != ""
		}
	}
	if newSecret && !opts.RequestTLS && !opts.AllowCleartextSecrets {
		return Settings{}, errCleartextSecret()
	}
	return parseKnown(attrs, Options{RequestTLS: true, AllowCleartextSecrets: opts.AllowCleartextSecrets})
}

func errCleartextSecret() *Error {
	return invalid("topic credentials may only be sent over HTTPS")
}

// Attributes renders s as the attribute map that Parse would read back
// (defaults omitted). With withSecrets false the password is left out and
// URL credentials are redacted.
func (s *Settings) Attributes(withSecrets bool) map[string]string {
	m := map[string]string{}
	put := func(k, v string) {
		if v != "" {
			m[k] = v
		}
	}
	ep := s.PushEndpoint
	if !withSecrets {
		if u, err := s.Endpoint(); err == nil && u != nil {
			ep = u.Redacted()
		}
	}
	put(AttrPushEndpoint, ep)
	if s.Persistent {
		m[AttrPersistent] = "true"
	}
	put(AttrOpaqueData, s.OpaqueData)
	if !s.VerifySSL {
		m[AttrVerifySSL] = "false"
	}
	if s.CloudEvents {
		m[AttrCloudEvents] = "true"
	}
	for k, v := range map[string]int{AttrTimeToLive: s.TimeToLive, AttrMaxRetries: s.MaxRetries, AttrRetrySleepDuration: s.RetrySleepDuration} {
		if v != UseGlobal {
			m[k] = strconv.Itoa(v)
		}
	}
	put(AttrPolicy, s.Policy)
	put(AttrAMQPExchange, s.AMQPExchange)
	if s.AMQPAckLevel != "" && s.AMQPAckLevel != AckBroker {
		m[AttrAMQPAckLevel] = s.AMQPAckLevel
	}
	if s.KafkaAckLevel != "" && s.KafkaAckLevel != AckBroker {
		m[AttrKafkaAckLevel] = s.KafkaAckLevel
	}
	if s.UseSSL {
		m[AttrUseSSL] = "true"
	}
	put(AttrCALocation, s.CALocation)
	put(AttrMechanism, s.Mechanism)
	put(AttrUserName, s.UserName)
	if withSecrets {
		put(AttrPassword, s.Password)
	}
	return m
}

func parseKnown(a map[string]string, opts Options) (Settings, error) {
	s := Settings{
		PushEndpoint:       strings.TrimSpace(a[AttrPushEndpoint]),
		OpaqueData:         a[AttrOpaqueData],
		Policy:             a[AttrPolicy],
		AMQPExchange:       a[AttrAMQPExchange],
		CALocation:         a[AttrCALocation],
		UserName:           a[AttrUserName],
		Password:           a[AttrPassword],
		VerifySSL:          true,
		AMQPAckLevel:       AckBroker,
		KafkaAckLevel:      AckBroker,
		TimeToLive:         UseGlobal,
		MaxRetries:         UseGlobal,
		RetrySleepDuration: UseGlobal,
	}
	var errs []string
	fail := func(format string, args ...any) { errs = append(errs, invalid(format, args...).Message) }
	boolAttr := func(name string, dst *bool) {
		v, ok := a[name]
		if !ok || v == "" {
			return
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			fail("%s must be true or false, not %q", name, v)
			return
		}
		*dst = b
	}
	intAttr := func(name string, dst *int) {
		v, ok := a[name]
		if !ok || v == "" || strings.EqualFold(v, "None") { // RGW prints unset values as "None"
			return
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			fail("%s must be a non-negative integer, not %q", name, v)
			return
		}
		*dst = n
	}
	boolAttr(AttrPersistent, &s.Persistent)
	boolAttr(AttrVerifySSL, &s.VerifySSL)
	boolAttr(AttrCloudEvents, &s.CloudEvents)
	boolAttr(AttrUseSSL, &s.UseSSL)
	intAttr(AttrTimeToLive, &s.TimeToLive)
	intAttr(AttrMaxRetries, &s.MaxRetries)
	intAttr(AttrRetrySleepDuration, &s.RetrySleepDuration)

	if v := a[AttrAMQPAckLevel]; v != "" {
		switch v {
		case AckNone, AckBroker, AckRoutable:
			s.AMQPAckLevel = v
		default:
			fail("amqp-ack-level must be none, broker or routable, not %q", v)
		}
	}
	if v := a[AttrKafkaAckLevel]; v != "" {
		switch v {
		case AckNone, AckBroker:
			s.KafkaAckLevel = v
		default:
			fail("kafka-ack-level must be none or broker, not %q", v)
		}
	}
	if v := a[AttrMechanism]; v != "" {
		switch strings.ToUpper(v) {
		case MechanismPlain, MechanismScramSHA256, MechanismScramSHA512:
			s.Mechanism = strings.ToUpper(v)
		default:
			fail("mechanism must be PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512, not %q", v)
		}
	}
	if _, err := ParseTopicPolicy(s.Policy); err != nil {
		errs = append(errs, err.(*Error).Message)
	}
	if s.Password != "" && s.UserName == "" {
		fail("password given without user-name")
	}

	u, err := s.Endpoint()
	if err != nil {
		errs = append(errs, err.(*Error).Message)
	}
	if u != nil {
		if u.User != "" && s.UserName != "" {
			fail("credentials given both in push-endpoint and as user-name/password")
		}
		isAMQP := u.Scheme == SchemeAMQP || u.Scheme == SchemeAMQPS
		if isAMQP && s.AMQPExchange == "" {
			fail("amqp endpoints need the amqp-exchange attribute (a topic exchange)")
		}
		if s.CloudEvents && u.Scheme != SchemeHTTP && u.Scheme != SchemeHTTPS {
			fail("cloudevents applies to http(s) endpoints only")
		}
		if s.Mechanism != "" && u.Scheme != SchemeKafka {
			fail("mechanism applies to kafka endpoints only")
		}
		if (s.UserName != "") && u.Scheme != SchemeKafka && !isAMQP {
			fail("user-name/password apply to kafka and amqp endpoints only")
		}
		if u.Scheme == SchemeKafka && s.HasSecret() && !s.UseSSL && !opts.AllowCleartextSecrets {
			fail("kafka credentials need use-ssl=true")
		}
	}
	if s.HasSecret() && !opts.RequestTLS && !opts.AllowCleartextSecrets {
		errs = append(errs, errCleartextSecret().Message)
	}
	if len(errs) > 0 {
		return Settings{}, invalid("%s", strings.Join(errs, "; "))
	}
	return s, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
