# expect: E034
import ../../../../Cargo.toml
