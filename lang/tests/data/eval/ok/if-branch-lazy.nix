if true then "ok" else throw "unreached"
