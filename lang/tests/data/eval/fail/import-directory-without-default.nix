# expect: E035
import ./lib
