[ http://example.org/foo?bar=1 https://a.b/c mailto:someone@example.org x:y ]
