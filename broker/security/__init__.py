"""Security: TLS listeners, SASL authentication and the ACL authorizer.

The connection authenticates (SaslHandshake / SaslAuthenticate, or the TLS client certificate)
and sets its principal; handlers ask the authorizer whether that principal may perform an
operation on a resource, as Kafka's StandardAuthorizer answers.
"""
